// The fleet's claims on a real etcd, as the cluster and crash suites use
// them: three node names, the controllers' lease timings, an exec
// provisioner on "shared storage" that every node reaches, and a checker
// of the fleet's invariants while controllers are killed.
import fs from 'node:fs'
import path from 'node:path'
import { Cluster } from '../../lib/cluster/client.js'
import type { Test } from './common.js'

export const NODES = ['n0', 'n1', 'n2']
export const LEASE_MS = 2_000
export const RETRY_MS = 300

export interface Claim {
  name: string
  phase: string
  volume: string | null
  uid?: string
}

/**
 * An exec provisioner that logs every call (one line each) and makes its
 * volume's directory on "shared storage"; `dir` is every node's
 * provisioners directory (--provisioners-dir), where it is "shared".
 */
export const sharedProvisioner = (dir: string): { program: string; dir: string; calls: () => string[] } => {
  const log = path.join(dir, 'calls.log')
  const shared = path.join(dir, 'shared')
  fs.mkdirSync(shared)
  const program = path.join(dir, 'provisioner.sh')
  fs.writeFileSync(
    program,
    `#!/bin/sh
input=$(cat)
name=$(printf '%s' "$input" | sed -n 's/.*"\\(volume_\\)\\{0,1\\}name":"\\(pvc-[^"]*\\)".*/\\2/p')
# No request: the podctl that started it was killed before it wrote one (as the crash test's provisioner says).
[ -n "$name" ] || { echo "no volume name in the request" >&2; exit 1; }
echo "$1 $name" >> ${log}
if [ "$1" = provision ]; then
  sleep 0.2
  mkdir -p ${shared}/$name
  printf '{"path":"${shared}/%s","capacity_bytes":1048576}\\n' "$name"
else
  rm -rf ${shared}/$name
  echo '{}'
fi
`,
    { mode: 0o755 },
  )
  const provisioners = path.join(dir, 'provisioners')
  fs.mkdirSync(provisioners, { mode: 0o755 })
  fs.symlinkSync(program, path.join(provisioners, 'shared'))
  return { program, dir: provisioners, calls: () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n').filter(Boolean) : []) }
}

/**
 * Watches etcd's claims and volumes every 50 ms while the test runs:
 * no claim is ever bound to two volumes (nor two volumes name one claim),
 * and no volume names a claim that is not there (unless released).
 */
export const invariantChecker = async (t: Test, endpoints: string) => {
  const cluster = await Cluster.open({ endpoints: endpoints.split(','), prefix: '/podctl/' })
  const problems: string[] = []
  let checks = 0
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      try {
        const claims = [...(await cluster.list('claims/')).values()].map((v) => JSON.parse(v) as Claim & { uid: string })
        const volumes = [...(await cluster.list('volumes/')).values()].map((v) => JSON.parse(v) as { name: string; phase: string; claim_ref: { uid: string; name: string } })
        const byUid = new Map<string, string[]>()
        for (const v of volumes) byUid.set(v.claim_ref.uid, [...(byUid.get(v.claim_ref.uid) ?? []), v.name])
        for (const [uid, vs] of byUid) if (vs.length > 1) problems.push(`claim uid ${uid} has volumes ${vs.join(', ')}`)
        // Read claims first, volumes after: a volume whose claim appeared in between is fine; one without a claim is an orphan.
        const uids = new Set(claims.map((c) => c.uid))
        const claimsAfter = new Set([...(await cluster.list('claims/')).values()].map((v) => (JSON.parse(v) as { uid: string }).uid))
        for (const v of volumes) if (v.phase !== 'released' && !uids.has(v.claim_ref.uid) && !claimsAfter.has(v.claim_ref.uid)) problems.push(`volume ${v.name} names no claim`)
        checks++
      } catch {
        // etcd without quorum: nothing to check until it is back
      }
      await new Promise((r) => setTimeout(r, 50))
    }
  })()
  t.teardown(() => {
    stopped = true
    cluster.close()
  })
  return {
    stop: async () => {
      stopped = true
      await loop
      return { problems: [...new Set(problems)], checks }
    },
  }
}
