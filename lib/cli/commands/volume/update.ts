/** podctl volume update: new content for a running pod's files volume, swapped in atomically. */
import type { Command } from 'commander'
import { PodctlError } from '../../../errors.js'
import { parseNonNegativeDuration } from '../../../duration.js'
import { dataDirOf, type Context } from '../../context.js'

interface UpdateOptions {
  fromFile?: string[]
  fromDir?: string
  wait: boolean
  timeout: string
}

const collect = (v: string, prev: string[] = []): string[] => [...prev, v]

export const registerVolumeUpdate = (volume: Command, ctx: Context): void => {
  volume
    .command('update')
    .description("replace the content of a running pod's files volume; apps see the old files or the new ones, never a mix")
    .argument('<uuid>', 'pod UUID or unambiguous prefix')
    .argument('<volume>', 'name of a files volume of the pod')
    .option('--from-file <REL=PATH>', 'file PATH becomes REL in the volume (PATH alone: its base name); repeatable', collect)
    .option('--from-dir <dir>', 'every regular file below DIR, by its path relative to DIR')
    .option('--no-wait', 'refuse (exit 4) instead of waiting while another operation on the volume is pending')
    .option('--timeout <duration>', 'how long to wait for a pending operation (exit 5 after)', '30s')
    .addHelpText(
      'after',
      `
The new content replaces the old as a whole: files not given are removed.

Examples:
  $ podctl volume update 8c3b1f0e config --from-file app.conf=./app.conf --from-file certs/ca.pem=/etc/ssl/ca.pem
  $ podctl volume update 8c3b1f0e config --from-dir ./config`,
    )
    .action(async (uuid: string, name: string, opts: UpdateOptions, self: Command) => {
      const timeoutMs = parseNonNegativeDuration(opts.timeout, '--timeout')
      if ((opts.fromFile ?? []).length === 0 && opts.fromDir === undefined) {
        throw new PodctlError('EUSAGE', 'no content given: use --from-file REL=PATH (repeatable) or --from-dir DIR', 'usage: podctl volume update UUID VOLUME --from-file REL=PATH... | --from-dir DIR')
      }
      const [{ podFromUUIDString }, { payloadFromSources, updateFilesVolume }] = await Promise.all([
        import('../../../pod/pod.js'),
        import('../../../volume/update.js'),
      ])
      const payload = payloadFromSources({ ...(opts.fromFile ? { fromFile: opts.fromFile } : {}), ...(opts.fromDir !== undefined ? { fromDir: opts.fromDir } : {}) })
      const pod = podFromUUIDString(dataDirOf(self), uuid)
      const onWait = (pid: number | undefined): void =>
        ctx.io.err(`podctl: waiting for another operation on volume ${name} of pod ${pod.uuid.slice(0, 8)}${pid !== undefined ? ` (process ${pid})` : ''}\n`)
      const { changed } = updateFilesVolume(pod, name, payload, { wait: opts.wait, timeoutMs, onWait })
      ctx.io.out(`${name} ${changed ? 'updated' : 'unchanged'}\n`)
    })
}
