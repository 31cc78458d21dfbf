/** What `podctl run` does: a new pod from the inputs, run in the foreground or detached (lib/cli/run-pod.ts). */
import type { FleetRef } from '../../../storage/pod-claims.js'
import type { Context } from '../../context.js'
import { manifestFromInputs } from '../../pod-input.js'
import { runNewPod } from '../../run-pod.js'
import type { RunOptions } from './options.js'

/** podctl run: prepare and run a pod from the inputs. */
export const run = async (ctx: Context, dataDir: string, command: string[], opts: RunOptions, fleet?: FleetRef): Promise<void> =>
  runNewPod(ctx, dataDir, manifestFromInputs(opts, command, 'run', fleet ? undefined : dataDir), opts, undefined, fleet)
