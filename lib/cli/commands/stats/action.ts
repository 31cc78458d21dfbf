/** What `podctl stats` does. */
import { setTimeout as sleep } from 'node:timers/promises'
import { PodctlError, shortId } from '../../../errors.js'
import { dataDirExists } from '../../../pod/layout.js'
import type { Pod } from '../../../pod/pod.js'
import { podFromArg } from '../../../pod/find.js'
import { waitReady } from '../../../pod/wait.js'
import { Include, listPods } from '../../../pod/walk.js'
import { sampleStats, type AppStats, type CpuMarks } from '../../../runtime/stats.js'
import type { Context } from '../../context.js'
import { formatTable, humanBytes, isJson, toJson, wantsHeader } from '../../output.js'
import type { StatsCommandOptions } from './options.js'

const HEADER = ['UUID', 'APP', 'CPU %', 'MEM USAGE / LIMIT', 'PIDS']

const row = (s: AppStats): string[] => [
  shortId(s.uuid),
  s.app,
  s.cpu_percent === null ? '-' : `${s.cpu_percent.toFixed(2)}%`,
  s.memory_bytes === null ? '-' : `${humanBytes(s.memory_bytes)} / ${s.memory_limit_bytes === null ? '-' : humanBytes(s.memory_limit_bytes)}`,
  s.pids === null ? '-' : String(s.pids),
]

/** The pods named (each must be an isolated pod), or every running isolated pod. */
const podsOf = (dataDir: string, uuids: string[]): Pod[] => {
  if (uuids.length === 0) return dataDirExists(dataDir) ? listPods(dataDir, Include.run).filter((p) => p.state === 'running' && p.record().isolation === 'namespaces') : []
  return uuids.map((u) => {
    const pod = podFromArg(dataDir, u)
    const short = shortId(pod.uuid)
    if (pod.state !== 'running') throw new PodctlError('EBADSTATE', `pod ${short} is ${pod.state}; stats are of running pods`)
    if (pod.record().isolation !== 'namespaces') throw new PodctlError('EBADSTATE', `pod ${short} runs its apps as host processes: it has no cgroups to read`, 'only isolated pods have cgroups to read: podctl run --isolation namespaces (or --image), or "isolation": "namespaces" in a manifest')
    return pod
  })
}

/** How long stats waits for a named pod's apps to start (just after run --detach) before it samples. */
const READY_WAIT_MS = 10_000

const byCreation = (a: Pod, b: Pod): number => (a.record().created_at ?? '').localeCompare(b.record().created_at ?? '') || a.uuid.localeCompare(b.uuid)

/** One sample in a pipe, with --no-stream or as JSON; on a terminal, a new one every second until Ctrl-C. */
export const stats = async (ctx: Context, dataDir: string, uuids: string[], opts: StatsCommandOptions): Promise<void> => {
  const marks: CpuMarks = new Map()
  // A pod named just after `run --detach` may still be starting its apps: sample once they run.
  for (const p of podsOf(dataDir, uuids)) if (uuids.length > 0 && !p.record().ready_at) await waitReady(p, { signal: AbortSignal.timeout(READY_WAIT_MS) }).catch(() => {})
  const sample = (): AppStats[] => {
    const pods = podsOf(dataDir, uuids)
    for (const p of pods) p.refresh()
    // Named pods in the order named; every running pod in the order they were made.
    return sampleStats(uuids.length > 0 ? pods : pods.sort(byCreation), marks)
  }
  if (isJson(opts.format)) {
    ctx.io.out(toJson(sample(), opts.format))
    return
  }
  const table = (s: AppStats[]): string => formatTable(wantsHeader(opts) ? HEADER : undefined, s.map(row))
  if (opts.stream === false || !process.stdout.isTTY) {
    ctx.io.out(table(sample()))
    return
  }
  // Ctrl-C ends the wait at once, and a second one while the last sample is drawn is not a kill (130).
  const interrupted = new AbortController()
  const onInt = (): void => interrupted.abort()
  process.on('SIGINT', onInt)
  try {
    while (!interrupted.signal.aborted) {
      // Home and clear, then the new sample: the screen shows one table.
      ctx.io.out(`\x1b[H\x1b[2J${table(sample())}`)
      await sleep(1000, undefined, { signal: interrupted.signal }).catch(() => {})
    }
  } finally {
    process.off('SIGINT', onInt)
  }
}
