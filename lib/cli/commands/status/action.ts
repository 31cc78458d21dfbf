/** What `podctl status` does: wait if asked, then print one pod. */
import { PodctlError, shortId } from '../../../errors.js'
import { parseDuration, parseNonNegativeDuration } from '../../../duration.js'
import type { Pod } from '../../../pod/pod.js'
import { podFromArg } from '../../../pod/find.js'
import { reapOrphans } from '../../../pod/reap.js'
import { isFinishedState } from '../../../pod/state.js'
import { podView } from '../../../pod/view.js'
import { waitFinished, waitReady } from '../../../pod/wait.js'
import { readUUIDFromFile } from '../../../pod/uuid.js'
import { withVolumes } from '../../../volume/view.js'
import type { Context } from '../../context.js'
import { isJson, toJson, waitingLine } from '../../output.js'
import { statusLines } from './lines.js'
import type { StatusOptions } from './options.js'

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
  const pod = podFromArg(dataDir, uuid)
  const waiting = waitingLine(ctx.io)
  try {
    if (ready !== undefined) {
      waiting.set(`waiting for pod ${shortId(pod.uuid)} to be ready${typeof ready === 'string' ? ` (at most ${ready})` : ''}`)
      await waitReady(pod, readySignal ? { signal: readySignal } : {})
    }
    if (wait !== undefined) {
      waiting.set(`waiting for pod ${shortId(pod.uuid)} to finish${typeof wait === 'string' ? ` (at most ${wait})` : ''}`)
      await waitFinished(pod, finishSignal ? { signal: finishSignal } : {})
    }
  } finally {
    waiting.finish()
  }
  for (;;) {
    // What was waited for is gone, or going: `rm` or `gc` won the race.
    // That is "no such pod" (3), not a status with exit 0.
    if ((ready !== undefined || wait !== undefined) && !podStillThere(pod)) {
      throw new PodctlError('ENOPOD', `pod ${pod.uuid} was removed while status waited for it`)
    }
    reapOrphans(pod)
    const v = withVolumes(pod, podView(pod))
    // A pod seen finished never runs again: one that reads as running holds
    // a remover's lock in run/ (rm, gc), whose end is waited for in turn.
    if (wait !== undefined && !isFinishedState(v.state)) {
      await waitFinished(pod, finishSignal ? { signal: finishSignal } : {})
      continue
    }
    ctx.io.out(isJson(opts.format) ? toJson(v, opts.format) : statusLines(v, ctx.io.colour))
    return
  }
}
