/** What `podctl status` does: wait if asked, then print one pod. */
import { PodctlError, oneLine } from '../../../errors.js'
import { parseDuration, parseNonNegativeDuration } from '../../../duration.js'
import { podFromUUIDString, readUUIDFromFile, type Pod } from '../../../pod/pod.js'
import { reapOrphans } from '../../../pod/reap.js'
import type { PodView } from '../../../pod/view.js'
import { podView } from '../../../pod/view.js'
import { waitFinished, waitReady } from '../../../pod/wait.js'
import { volumeStatusLine } from '../../../volume/status-line.js'
import { withVolumes, type VolumeView } from '../../../volume/view.js'
import type { StatusOptions } from './index.js'
import type { Context } from '../../context.js'
import { isJson, styleState, toJson, waitingLine } from '../../output.js'

/** rkt-style key=value lines; keys with no value yet are left out. */
export const statusLines = (v: PodView & { volumes?: VolumeView[] }, colour = false): string => {
  // Values are one line each (a fleet's pods come from etcd, a volume's path from a provisioner).
  const lines = [`state=${styleState(oneLine(v.state), colour)}`]
  if (v.damaged !== undefined) lines.push(`damaged=${oneLine(v.damaged)}`)
  if (v.failure !== undefined) lines.push(`failure=${oneLine(v.failure)}`)
  if (v.created_at) lines.push(`created=${oneLine(String(v.created_at))}`)
  if (v.started_at) lines.push(`started=${oneLine(String(v.started_at))}`)
  if (v.pid !== null) lines.push(`pid=${oneLine(String(v.pid))}`)
  if (v.runtime !== null) lines.push(`runtime=${oneLine(v.runtime)}`)
  lines.push(`exited=${v.state === 'exited' || v.state === 'exited garbage' || v.state === 'exited deleting'}`)
  for (const a of v.apps) {
    const name = oneLine(String(a.name))
    if (a.exit_code !== null) lines.push(`app-${name}=${oneLine(String(a.exit_code))}`)
    if (a.reason !== undefined) lines.push(`app-${name}-reason=${oneLine(a.reason)}`)
    // CONTRACT §12: a privileged app is no boundary, and status says so.
    if (a.privileged === true) lines.push(`app-${name}-privileged=true`)
    if (a.image !== undefined) lines.push(`app-${name}-image=${oneLine(a.image_name ?? a.image)}`)
    // CONTRACT §13: an image app's root is an overlay, or a copy where overlayfs cannot be mounted.
    if (a.rootfs !== undefined) lines.push(`app-${name}-rootfs=${oneLine(a.rootfs)}`)
  }
  for (const vol of v.volumes ?? []) lines.push(oneLine(volumeStatusLine(vol)))
  return `${lines.join('\n')}\n`
}

const isDuration = (text: string): boolean => {
  try {
    parseDuration(text)
    return true
  } catch {
    return false
  }
}

/**
 * The pod and the waits a status command line asks for. `--wait` and
 * `--wait-ready` take an optional duration, and commander gives them the
 * next word unless it starts with "-": `status --wait UUID` arrives with
 * UUID as the duration and no pod. In rkt's syntax (`--wait[=DURATION]`)
 * that word is the pod, so when the pod is missing, the word one of them
 * took is the pod: the one that is not a duration, or the only one.
 */
export const podAndWaits = (uuid: string | undefined, opts: StatusOptions): { uuid: string; wait?: true | string; waitReady?: true | string } => {
  if (opts.uuidFile !== undefined) {
    if (uuid !== undefined) throw new PodctlError('EUSAGE', 'give a pod UUID or --uuid-file, not both')
    return { ...opts, uuid: readUUIDFromFile(opts.uuidFile) }
  }
  if (uuid !== undefined) return { uuid, ...opts }
  const taken = (['wait', 'waitReady'] as const).filter((k) => typeof opts[k] === 'string')
  const pod = taken.length === 1 ? taken : taken.filter((k) => !isDuration(opts[k] as string))
  if (pod.length !== 1) throw new PodctlError('EUSAGE', "missing required argument 'uuid'", 'usage: podctl status UUID|--uuid-file FILE [--wait[=DURATION]] [--wait-ready[=DURATION]]')
  const key = pod[0]!
  return { ...opts, uuid: opts[key] as string, [key]: true }
}

const timeoutSignal = (value: true | string | undefined, flag: string): AbortSignal | undefined =>
  typeof value === 'string' ? AbortSignal.timeout(parseNonNegativeDuration(value, flag)) : undefined

const podStillThere = (pod: Pod): boolean => {
  try {
    pod.refresh()
    return pod.state !== 'deleting' && pod.state !== 'exited deleting'
  } catch {
    return false
  }
}

/** Waits as asked, then prints the pod. */
export const status = async (ctx: Context, dataDir: string, uuidArg: string | undefined, opts: StatusOptions): Promise<void> => {
  const { uuid, wait, waitReady: ready } = podAndWaits(uuidArg, opts)
  // Durations are checked before anything is touched.
  const readySignal = timeoutSignal(ready, '--wait-ready')
  const finishSignal = timeoutSignal(wait, '--wait')
  const pod = podFromUUIDString(dataDir, uuid)
  const waiting = waitingLine(ctx.io)
  try {
    if (ready !== undefined) {
      waiting.set(`waiting for pod ${pod.uuid.slice(0, 8)} to be ready${typeof ready === 'string' ? ` (at most ${ready})` : ''}`)
      await waitReady(pod, readySignal ? { signal: readySignal } : {})
    }
    if (wait !== undefined) {
      waiting.set(`waiting for pod ${pod.uuid.slice(0, 8)} to finish${typeof wait === 'string' ? ` (at most ${wait})` : ''}`)
      await waitFinished(pod, finishSignal ? { signal: finishSignal } : {})
    }
  } finally {
    waiting.finish()
  }
  if (ready !== undefined || wait !== undefined) {
    // What was waited for is gone, or going: `rm` or `gc` won the race.
    // That is "no such pod" (3), not a status with exit 0.
    if (!podStillThere(pod)) {
      throw new PodctlError('ENOPOD', `pod ${pod.uuid} was removed while status waited for it`)
    }
  }
  reapOrphans(pod)
  const v = withVolumes(pod, podView(pod))
  ctx.io.out(isJson(opts.format) ? toJson(v, opts.format) : statusLines(v, ctx.io.colour))
}
