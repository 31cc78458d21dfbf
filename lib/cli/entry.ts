/**
 * What bin/podctl runs. Every podctl command pays Node's start-up, so the
 * cheapest answers come first: the plain forms of `podctl version` are
 * printed before commander (~12 ms to load on Node 20) and the pod core
 * are imported; everything else goes through the full program.
 */
import { plainVersionRequest } from './version-info.js'

/** Runs podctl with `argv` (without node and script); returns the exit code. */
export const run = async (argv: string[]): Promise<number> => {
  const version = plainVersionRequest(argv)
  if (version !== undefined) {
    process.stdout.write(version)
    return 0
  }
  const { main } = await import('./main.js')
  return main(argv)
}
