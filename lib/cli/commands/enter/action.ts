/** What `podctl enter` does. */
import { podFromArg } from '../../../pod/find.js'
import { enterPod } from '../../../runtime/enter.js'
import type { Context } from '../../context.js'
import type { EnterCommandOptions } from './options.js'

/** Runs the command in the pod; the exit code is the command's. */
export const enter = async (ctx: Context, dataDir: string, uuid: string, command: string[], opts: EnterCommandOptions): Promise<void> => {
  const pod = podFromArg(dataDir, uuid)
  ctx.state.exitCode = await enterPod(pod, pod.podManifest().manifest, command, { ...(opts.app !== undefined ? { app: opts.app } : {}), tty: opts.tty === true })
}
