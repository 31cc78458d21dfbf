/**
 * What bin/podctl runs. Every podctl command pays Node's start-up, so the
 * cheapest answers come first: the plain forms of `podctl version` are
 * printed before commander and the pod core are imported, and the plain
 * forms of `list` and `run -- CMD` (lib/cli/fast-paths.ts) skip commander
 * and the command table; everything else goes through the full program.
 *
 * The three imports below are the seams of the built CLI: `npm run build`
 * bundles entry, fast-list, fast-run and main each into one file of
 * dist/bundle/ (lib/build/bundle.ts), and these imports load the sibling
 * file at run time, so a command reads only the code it runs.
 */
import { plainListRequest, plainRunRequest } from './fast-paths.js'
import { stdout } from './stdout.js'
import { plainVersionRequest } from './version-info.js'

/** Runs podctl with `argv` (without node and script); returns the exit code. */
export const run = async (argv: string[]): Promise<number> => {
  const version = plainVersionRequest(argv)
  if (version !== undefined) {
    stdout().write(version)
    return 0
  }
  const list = plainListRequest(argv)
  if (list) return (await import('./fast-list.js')).runPlainList(list)
  const runRequest = plainRunRequest(argv)
  if (runRequest) return (await import('./fast-run.js')).runPlainRun(runRequest)
  // commander writes help and usage to process.stdout itself.
  stdout()
  // --debug prints stack traces: point them at lib/*.ts, not the bundle.
  if (argv.includes('--debug')) process.setSourceMapsEnabled(true)
  const { main } = await import('./main.js')
  return main(argv)
}
