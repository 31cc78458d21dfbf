/**
 * The guardian: what kills an app's process group when its supervisor
 * dies, however it dies (SIGKILL included). Node offers no
 * PR_SET_PDEATHSIG without a native addon; a pipe's end of file is the
 * portable equivalent.
 *
 * Every app is started through a few lines of `sh` (`guardedSpawnArgs`):
 * that `sh` leaves behind a watcher process, the guardian, then execs the
 * app in its own place, so the app keeps the pid (and process group) the
 * supervisor spawned. The guardian reads fd 3, one end of a socket pair
 * whose other end only the supervisor holds (Node opens it close-on-exec,
 * so no app inherits it). When the supervisor dies the kernel closes its
 * end, `read` sees end of file, and the guardian SIGKILLs the app's group,
 * itself included.
 *
 * Born with the app, the guardian covers it from its first instruction:
 * there is no moment at which an app runs that no guardian knows. It costs
 * no spawn from Node (a fork of a large Node process takes milliseconds;
 * a fork of `sh` a fraction of one) and one small process per running app.
 */

/** The fd on which the app's `sh` and its guardian find the supervisor's socket. */
export const GUARDIAN_FD = 3

// `$$` is the app's pid, which leads its group (the supervisor spawns it
// with `detached: true`). The guardian is forked twice so that it is not
// the app's child: the inner `( … ) &` leaves it to init once the outer
// subshell, which `sh` waits for, has exited. So the app never sees an
// unexpected child (a `waitpid(-1)` loop, `ps --ppid`). It keeps nothing
// of the app's open: stdin is the socket, output goes to /dev/null. It
// ignores the signals `podctl stop` and the terminal send to the app's
// group; it dies with the group's SIGKILL when the app has ended.
const SCRIPT = [
  `( ( trap '' INT HUP TERM QUIT; while read -r _; do :; done; kill -s KILL -- "-$$" ) <&${GUARDIAN_FD} >/dev/null 2>&1 & )`,
  `exec ${GUARDIAN_FD}<&-`,
  'exec "$@"',
].join('\n')

/** What the guardian's `sh` is called in `ps` ($0 of its script). */
export const GUARDIAN_NAME = 'podctl-guardian'

/**
 * The program and arguments that run `file` with `args` under a guardian.
 * Spawn them with fd `GUARDIAN_FD` a pipe, and keep that pipe open for as
 * long as the app may run.
 */
export const guardedSpawnArgs = (file: string, args: readonly string[]): [string, string[]] => [
  '/bin/sh',
  ['-c', SCRIPT, GUARDIAN_NAME, file, ...args],
]
