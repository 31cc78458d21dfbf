/**
 * podctl's stdout, set up on first use. Node creates process.stdout (and
 * the stream machinery behind it) on first access, so a command
 * that prints nothing, like `podctl run -- /bin/true`, never pays for it.
 */

let quiet = false

/**
 * process.stdout, with a closed pipe ending podctl quietly. A reader that
 * stops early (`podctl list | head`) closes the pipe; Node ignores SIGPIPE
 * and reports EPIPE on stdout instead. What was asked for has been read,
 * so end quietly, as a tool killed by SIGPIPE would.
 */
export const stdout = (): NodeJS.WriteStream => {
  const s = process.stdout
  if (!quiet) {
    quiet = true
    s.on('error', (er: NodeJS.ErrnoException) => {
      if (er.code !== 'EPIPE') throw er
      process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0)
    })
  }
  return s
}
