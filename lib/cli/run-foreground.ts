/**
 * Running a pod in the foreground: this podctl process is the supervisor.
 * Errors before the pod runs keep their own exit codes (2, 3, 4); podctl's
 * own failure once it is running is 125 (CONTRACT §4).
 */
import { RunFailure } from '../errors.js'
import type { PodManifest } from '../pod/manifest.js'
import type { Pod } from '../pod/pod.js'
import type { Context } from './context.js'
import { stdout } from './stdout.js'

export const runForeground = async (
  _ctx: Context,
  start: () => Promise<{ pod: Pod; manifest: PodManifest }>,
  alwaysPrefix = false,
): Promise<number> => {
  const { pod, manifest } = await start()
  const [{ Supervisor }, { terminalOutput }] = await Promise.all([import('../run/supervisor.js'), import('../run/terminal-output.js')])
  try {
    return await new Supervisor(pod, manifest, { output: terminalOutput(alwaysPrefix || manifest.apps.length > 1, { stdout, stderr: () => process.stderr }) }).run()
  } catch (er) {
    throw new RunFailure(`running pod ${pod.uuid} failed: ${(er as Error).message}`, undefined, { cause: er })
  }
}
