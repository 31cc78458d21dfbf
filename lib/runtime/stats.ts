/**
 * What the apps of running isolated pods use (CONTRACT §12, podman pod
 * stats): CPU, memory and processes, read from each app container's
 * cgroup. A first sample gives CPU use averaged since the app's cgroup
 * was made (the runtime's set-up counts in it too, so the app's start
 * would be too late a base); a later one, since the sample before it.
 */
import { cgroupUsage } from '../proc/cgroups.js'
import type { Pod } from '../pod/pod.js'
import { appCgroup, podCgroup } from './generate/resources.js'

/** One app's use, as `stats --format json` prints it. */
export interface AppStats {
  uuid: string
  app: string
  /** Of one core: 200 is two cores busy. Null when its cgroup cannot be read (a rootless pod without cgroups). */
  cpu_percent: number | null
  memory_bytes: number | null
  memory_limit_bytes: number | null
  pids: number | null
}

/** CPU time read at a moment, per app, for the next sample's difference. */
export type CpuMarks = Map<string, { cpuNanos: number; at: number }>

/**
 * One sample of every running app of `pods` that runs in a container;
 * `marks` (updated) holds the previous sample's CPU times.
 */
export const sampleStats = (pods: readonly Pod[], marks: CpuMarks = new Map(), now: number = Date.now()): AppStats[] => {
  const out: AppStats[] = []
  for (const pod of pods) {
    const r = pod.record()
    if (r.isolation !== 'namespaces') continue
    // A limit of the whole pod holds for each of its apps too: the smaller of the two is the app's.
    const podLimit = cgroupUsage(podCgroup(pod.uuid))?.memoryLimitBytes ?? null
    for (const a of r.apps) {
      if (a.state !== 'running') continue
      const key = `${pod.uuid}/${a.name}`
      const u = cgroupUsage(appCgroup(pod.uuid, a.name))
      if (u === undefined) {
        out.push({ uuid: pod.uuid, app: a.name, cpu_percent: null, memory_bytes: null, memory_limit_bytes: null, pids: null })
        continue
      }
      const before = marks.get(key) ?? { cpuNanos: 0, at: u.createdMs ?? (a.started_at ? Date.parse(a.started_at) : now) }
      const wallNanos = Math.max(1, now - before.at) * 1e6
      marks.set(key, { cpuNanos: u.cpuNanos, at: now })
      out.push({
        uuid: pod.uuid,
        app: a.name,
        cpu_percent: Math.round((Math.max(0, u.cpuNanos - before.cpuNanos) / wallNanos) * 10000) / 100,
        memory_bytes: u.memoryBytes,
        memory_limit_bytes: u.memoryLimitBytes === null ? podLimit : podLimit === null ? u.memoryLimitBytes : Math.min(u.memoryLimitBytes, podLimit),
        pids: u.pids,
      })
    }
  }
  return out
}
