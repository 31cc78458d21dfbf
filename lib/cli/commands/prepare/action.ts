/** What `podctl prepare` does. */
import { prepareNewPod } from '../../../run/new-pod.js'
import type { FleetRef } from '../../../storage/pod-claims.js'
import type { Context } from '../../context.js'
import { manifestFromInputs } from '../../pod-input.js'
import type { PrepareOptions } from './options.js'

/** Creates a pod from the inputs, leaves it prepared, and prints its UUID. */
export const prepare = async (ctx: Context, dataDir: string, command: string[], opts: PrepareOptions, fleet?: FleetRef): Promise<void> => {
  const manifest = manifestFromInputs(opts, command, 'prepare', fleet ? undefined : dataDir)
  const pod = await prepareNewPod(dataDir, manifest, { uuidFileSave: opts.uuidFileSave, runtime: opts.runtime, ...(fleet ? { claims: { fleet } } : {}) })
  ctx.io.out(`${pod.uuid}\n`)
}
