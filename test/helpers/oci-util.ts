/**
 * Isolated pods on an OCI runtime (CONTRACT §12), seen from the host: a
 * pod's JSON, its processes, its cgroups, what its runtime keeps, the
 * kernel's view of a process (/proc/PID/status), and the unprivileged
 * user whose pods run rootless. Not a test file (test/helpers/ is excluded
 * from discovery).
 */
import { appCgroup, podCgroup } from '../../lib/runtime/generate/resources.js'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { CAPABILITIES } from '../../lib/proc/capabilities.js'
import { cgroupLayout } from '../../lib/proc/cgroups.js'
import { findRuntime } from '../../lib/runtime/runtime.js'
import { podctl, type RunOptions } from './cli-util.js'
import type { Test } from './common.js'
import { alive, allPids } from './run-util.js'

/** `podctl status UUID --format json`, parsed (throws with stderr when it fails). */
export const statusJson = (dir: string, uuid: string, opts: RunOptions = {}): any => {
  const r = podctl(dir, ['status', uuid, '--format', 'json'], opts)
  if (r.status !== 0) throw new Error(`status ${uuid} exited ${r.status}: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

/** The app named `name` in a pod's JSON. */
export const appOf = (pod: any, name: string): any => (pod.apps as any[]).find((a) => a.name === name)

/** Live processes whose environment says they belong to pod `uuid` (its apps and what they started). */
export const processesOfPod = (uuid: string): number[] =>
  allPids().filter((p) => {
    try {
      return fs.readFileSync(`/proc/${p}/environ`, 'latin1').includes(`PODCTL_POD_UUID=${uuid}`) && !fs.readFileSync(`/proc/${p}/cmdline`, 'latin1').includes('supervisor-main') && alive(p)
    } catch {
      return false
    }
  })

/** The directory of a pod's cgroup (or of one of its apps') in a v1 hierarchy, or in the v2 tree on a v2 host. */
export const cgroupDir = (controller: string, uuid: string, app?: string): string => {
  const l = cgroupLayout()
  const m = l.mode === 'v2' ? l.v2 : l.v1.get(controller)
  if (!m) throw new Error(`no ${controller} cgroup hierarchy is mounted here`)
  return path.join(m.mountPoint, path.posix.relative(m.root, app ? appCgroup(uuid, app) : podCgroup(uuid)))
}

/** Reads a number from a cgroup file (v1 names). */
export const cgroupNumber = (controller: string, uuid: string, file: string, app?: string): number => Number(fs.readFileSync(path.join(cgroupDir(controller, uuid, app), file), 'utf8').trim())

/** The containers the default runtime keeps for data dir `dir` (`runc --root DIR/runtime/runc list -q`). */
export const runtimeList = (dir: string): string[] => {
  const rt = findRuntime()
  const r = spawnSync(rt.path, ['--root', path.join(dir, 'runtime', rt.name), 'list', '-q'], { encoding: 'utf8' })
  return r.stdout.split('\n').filter((l) => l !== '')
}

/** `Key:\tvalue` lines of /proc/PID/status (as an app prints them) as a map. */
export const procStatus = (text: string): Map<string, string> =>
  new Map(
    text
      .split('\n')
      .map((l) => /^(\w+):\s*(.*)$/.exec(l.replace(/^\[[a-z0-9-]+\] /, '')))
      .filter((m) => m !== null)
      .map((m) => [m[1]!, m[2]!.trim()] as [string, string]),
  )

/** The capability names (without CAP_) of a CapEff/CapBnd hex mask. */
export const capsOfMask = (hex: string): string[] => {
  const bits = BigInt(`0x${hex}`)
  return CAPABILITIES.filter((_, i) => (bits >> BigInt(i)) & 1n)
}

/** This process's bounding set, as names: what a runtime started by root can hand on at most. */
export const hostBounding = (): string[] => capsOfMask(/^CapBnd:\s*([0-9a-f]+)$/m.exec(fs.readFileSync('/proc/self/status', 'utf8'))![1]!)

/** podman's default capabilities (CONTRACT §12), in the kernel's order. */
export const PODMAN_DEFAULT = ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'SETGID', 'SETUID', 'SETPCAP', 'NET_BIND_SERVICE', 'SYS_CHROOT', 'SETFCAP']

/** A manifest of an isolated pod: the given apps, `over` at the top. */
export const isolatedManifest = (apps: object[], over: object = {}): object => ({ apiVersion: 'podctl/v1', isolation: 'namespaces', ...over, apps })

// ---- an unprivileged user -------------------------------------------------

export const TEST_USER = 'podctl-iso'

export interface Who {
  name: string
  opts: RunOptions
  uid: number
  gid: number
}

/** The unprivileged user of the rootless tests (test/bin/isolation.ts's), made if missing; or why there is none. */
export const unprivileged = (): Who | string => {
  if (process.getuid?.() !== 0) return 'the tests do not run as root, so they cannot make a user to run as'
  const id = (flag: string): number => Number(spawnSync('id', [flag, TEST_USER], { encoding: 'utf8' }).stdout.trim())
  if (spawnSync('id', [TEST_USER]).status !== 0) {
    const r = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', TEST_USER], { encoding: 'utf8' })
    if (r.error || r.status !== 0) return `useradd ${TEST_USER} failed: ${r.error?.message ?? r.stderr.trim()}`
  }
  const uid = id('-u')
  const gid = id('-g')
  return { name: `as the unprivileged user ${TEST_USER}`, uid, gid, opts: { uid, gid, cwd: '/' } }
}

/** Every running pod of `dir` stopped at once, then whatever of its processes is left killed. */
const killPodsIn = (dir: string, who: Who): void => {
  const r = podctl(dir, ['list', '--format', 'json'], who.opts)
  if (r.status !== 0) return
  const pods = JSON.parse(r.stdout) as { uuid: string; state: string; pid: number | null }[]
  const running = pods.filter((p) => p.state === 'running')
  if (running.length > 0) podctl(dir, ['stop', '--force', ...running.map((p) => p.uuid)], who.opts)
  for (const p of pods) {
    for (const pid of [...processesOfPod(p.uuid), ...(p.state === 'running' && p.pid ? [p.pid] : [])]) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // gone
      }
    }
  }
}

/** A data dir `who` owns, in a sticky /tmp (CONTRACT §10 trusts it); its pods are ended and it is removed at teardown. */
export const userDataDir = (t: Test, who: Who): string => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-iso-'))
  fs.chmodSync(base, 0o755)
  fs.chownSync(base, who.uid, who.gid)
  const dir = path.join(base, 'data')
  t.teardown(() => {
    killPodsIn(dir, who)
    fs.rmSync(base, { recursive: true, force: true })
  })
  return dir
}
