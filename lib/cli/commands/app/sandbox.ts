/** podctl app sandbox: a running mutable pod with no apps yet. */
import type { Command } from 'commander'
import { dataDirOf, type Context } from '../../context.js'
import { runForeground } from '../../run-foreground.js'

export const registerAppSandbox = (app: Command, ctx: Context): void => {
  app
    .command('sandbox')
    .description('start a mutable pod with no apps; it runs until stopped (podctl stop)')
    .option('--name <name>', 'pod name')
    .option('--detach', 'return once the pod is running and print its UUID')
    .option('--uuid-file-save <file>', 'also write the pod UUID to this file')
    .addHelpText('after', '\nExamples:\n  $ podctl app sandbox --detach --name tools\n  $ podctl app sandbox          # foreground: streams the output of the apps added later')
    .action(async (opts: { name?: string; detach?: boolean; uuidFileSave?: string }, self: Command) => {
      const [{ validateManifest, API_VERSION }, path] = await Promise.all([import('../../../pod/manifest.js'), import('node:path')])
      const manifest = validateManifest({ apiVersion: API_VERSION, mutable: true, apps: [], ...(opts.name !== undefined ? { name: opts.name } : {}) })
      const dataDir = dataDirOf(self)
      const uuidFileSave = opts.uuidFileSave !== undefined ? path.resolve(opts.uuidFileSave) : undefined
      if (opts.detach) {
        const { runDetached } = await import('../../../run/detach.js')
        ctx.io.out(`${await runDetached({ dataDir, manifest, ...(uuidFileSave !== undefined ? { uuidFileSave } : {}) })}\n`)
        return
      }
      ctx.state.exitCode = await runForeground(ctx, async () => {
        const [{ createPod, discard }, { writeUUIDToFile }] = await Promise.all([import('../../../pod/prepare.js'), import('../../../pod/pod.js')])
        const pod = await createPod(dataDir, manifest)
        try {
          if (uuidFileSave !== undefined) writeUUIDToFile(pod.uuid, uuidFileSave)
          pod.toRun()
        } catch (er) {
          discard(pod)
          throw er
        }
        ctx.io.err(`podctl: sandbox ${pod.uuid} is running; add apps with: podctl app add ${pod.uuid.slice(0, 8)} --name NAME -- CMD\n`)
        return { pod, manifest }
      }, true)
    })
}
