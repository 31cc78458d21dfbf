/**
 * What `podctl run` does once its options are parsed: shared by the
 * commander command (lib/cli/commands/run.ts) and the fast path of
 * lib/cli/fast-run.ts for `run [--detach] -- CMD...` (lib/cli/fast-paths.ts).
 */
import type { Context } from './context.js'
import type { PodInputOptions } from './pod-input-options.js'
import { runForeground } from './run-foreground.js'

export type RunOptions = PodInputOptions & { detach?: boolean }

/** Prepares and runs a pod; sets the exit code (foreground) or prints the UUID (--detach). */
export const runAction = async (ctx: Context, dataDir: string, command: string[], opts: RunOptions): Promise<void> => {
  const { manifestFromInputs } = await import('./pod-input.js')
  const manifest = manifestFromInputs(opts, command, undefined, 'run')
  if (opts.detach) {
    const [{ runDetached }, path] = await Promise.all([import('../run/detach.js'), import('node:path')])
    const uuidFileSave = opts.uuidFileSave !== undefined ? path.resolve(opts.uuidFileSave) : undefined
    const uuid = await runDetached({ dataDir, manifest, ...(uuidFileSave !== undefined ? { uuidFileSave } : {}) })
    ctx.io.out(`${uuid}\n`)
    return
  }
  ctx.state.exitCode = await runForeground(ctx, async () => {
    const [{ createPod, discard }, { writeUUIDToFile }] = await Promise.all([import('../pod/prepare.js'), import('../pod/pod.js')])
    const pod = await createPod(dataDir, manifest)
    try {
      if (opts.uuidFileSave !== undefined) writeUUIDToFile(pod.uuid, opts.uuidFileSave)
      if (manifest.volumes?.length) (await import('../volume/pod-volumes.js')).setUpPodVolumes(pod, manifest)
      pod.toRun()
    } catch (er) {
      discard(pod)
      throw er
    }
    return { pod, manifest }
  })
}
