/**
 * What bin/podctl runs. Every podctl command pays Node's start-up, so the
 * cheapest answers come first: the plain forms of `podctl version` are
 * printed before commander (~12 ms to load on Node 20) and the pod core
 * are imported; everything else goes through the full program.
 */
import { plainVersionRequest } from './version-info.js'

// A reader that stops early (`podctl list | head`) closes the pipe; Node
// ignores SIGPIPE and reports EPIPE on stdout instead. What was asked for
// has been read, so end quietly, as a tool killed by SIGPIPE would.
const quietOnClosedPipe = (stream: NodeJS.WriteStream): void => {
  stream.on('error', (er: NodeJS.ErrnoException) => {
    if (er.code !== 'EPIPE') throw er
    process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0)
  })
}

/** Runs podctl with `argv` (without node and script); returns the exit code. */
export const run = async (argv: string[]): Promise<number> => {
  quietOnClosedPipe(process.stdout)
  const version = plainVersionRequest(argv)
  if (version !== undefined) {
    process.stdout.write(version)
    return 0
  }
  const { main } = await import('./main.js')
  return main(argv)
}
