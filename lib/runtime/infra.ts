/**
 * The infra of an isolated pod (CONTRACT §12, §12a): the process that
 * holds the pod's namespaces, pid 1 of the pod. It is Debian's static
 * catatonit in pause mode, in a root that holds nothing but itself: an
 * app that opens /proc/1/root finds catatonit, /proc and an empty /dev,
 * never the host's /etc or /usr. The copy podctl runs is execute-only
 * (0111), so that the kernel makes the infra non-dumpable when it starts
 * it: an app of the same uid without CAP_SYS_PTRACE cannot open its /proc
 * files at all.
 *
 * A paused catatonit ends only when signalled, so the infra's runtime
 * runs under a guardian (`infraSpawnArgs`): a small host `sh` that reads
 * the supervisor's socket and, at its end of file, however the
 * supervisor ended (SIGKILL included), kills the infra. Pid 1 gone, the
 * kernel kills every process of the pod.
 *
 * ```
 * <data>/runtime/infra/catatonit   the copy (0111)
 * <data>/runtime/infra/proc, dev   mount points, made here so that the
 *                                  runtime never writes into this root
 * ```
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { tmpName } from '../fs/atomic.js'
import { DIR_MODE } from '../fs/modes.js'
import { findProgram } from '../proc/executable.js'

/** The program, and where Debian's podman package links it. */
const PROGRAM = 'catatonit'
const PODMAN_LIBEXEC = '/usr/libexec/podman/catatonit'

/** Where the infra's root is in a data dir, and the program's name in it. */
export const INFRA_DIR = path.join('runtime', 'infra')
export const INFRA_EXE = `/${PROGRAM}`

const INSTALL_HINT = 'install it: apt-get install catatonit (Fedora: dnf install catatonit)'

/** PT_INTERP: a program header that names the dynamic loader. */
const PT_INTERP = 3

/**
 * Whether the ELF file at `file` has no program interpreter (is static),
 * read from its headers: a dynamic program would find no loader in a
 * root that holds only itself.
 */
export const isStaticElf = (file: string): boolean => {
  const fd = fs.openSync(file, 'r')
  try {
    const head = Buffer.alloc(64)
    fs.readSync(fd, head, 0, 64, 0)
    if (head.readUInt32BE(0) !== 0x7f454c46) return false
    const is64 = head[4] === 2
    const le = head[5] === 1
    const u16 = (b: Buffer, o: number): number => (le ? b.readUInt16LE(o) : b.readUInt16BE(o))
    const u32 = (b: Buffer, o: number): number => (le ? b.readUInt32LE(o) : b.readUInt32BE(o))
    const phoff = is64 ? Number(le ? head.readBigUInt64LE(32) : head.readBigUInt64BE(32)) : u32(head, 28)
    const phentsize = u16(head, is64 ? 54 : 42)
    const phnum = u16(head, is64 ? 56 : 44)
    if (phnum === 0 || phentsize < 4 || phnum > 4096) return false
    const table = Buffer.alloc(phentsize * phnum)
    fs.readSync(fd, table, 0, table.length, phoff)
    for (let i = 0; i < phnum; i++) if (u32(table, i * phentsize) === PT_INTERP) return false
    return true
  } finally {
    fs.closeSync(fd)
  }
}

/** The host's catatonit; EFAILED naming the package when there is none. */
const infraProgram = (): string => {
  const found = findProgram(PROGRAM) ?? (fs.existsSync(PODMAN_LIBEXEC) ? fs.realpathSync(PODMAN_LIBEXEC) : undefined)
  if (found === undefined) throw new PodctlError('EFAILED', 'isolated pods need catatonit, the infra process that holds their namespaces, and this host has none', INSTALL_HINT)
  return found
}

const checkStatic = (program: string): string => {
  if (!isStaticElf(program)) throw new PodctlError('EFAILED', `${program} is not a statically linked program; the infra runs it in a root that holds nothing else`, INSTALL_HINT)
  return program
}

/** The host's catatonit, checked to be static (what prepare checks of the host). */
export const findInfraProgram = (): string => checkStatic(infraProgram())

/** The directories the infra's runtime passes through in a data dir, down to the infra's root. */
export const infraRootPath = (dataDir: string): string[] => [path.join(dataDir, path.dirname(INFRA_DIR)), path.join(dataDir, INFRA_DIR)]

/** Makes `name` a directory in `dir` if it is not one yet (never through a link: mkdir does not follow one). */
const mkdirOnce = (dir: string, name: string, mode: number): void => {
  try {
    fs.mkdirSync(path.join(dir, name), { mode })
  } catch (er) {
    if ((er as NodeJS.ErrnoException).code !== 'EEXIST') throw er
  }
}

/**
 * The infra's root in `dataDir`, made on first use and brought up to date
 * when the host's catatonit changed: a copy of it, execute-only, put in
 * place by a rename so that concurrent starts never see half a file.
 */
export const ensureInfraRoot = (dataDir: string, program: string = infraProgram()): string => {
  const root = path.join(dataDir, INFRA_DIR)
  fs.mkdirSync(root, { recursive: true, mode: DIR_MODE })
  mkdirOnce(root, 'proc', 0o555)
  mkdirOnce(root, 'dev', 0o755)
  const src = fs.statSync(program)
  const have = fs.lstatSync(path.join(root, PROGRAM), { throwIfNoEntry: false })
  if (have?.isFile() && have.size === src.size && (have.mode & 0o7777) === 0o111 && have.mtimeMs >= src.mtimeMs) return root
  checkStatic(program)
  const tmp = path.join(root, tmpName(PROGRAM))
  try {
    fs.copyFileSync(program, tmp)
    fs.chmodSync(tmp, 0o111)
    fs.renameSync(tmp, path.join(root, PROGRAM))
  } finally {
    fs.rmSync(tmp, { force: true })
  }
  return root
}

/** The fd on which the guardian finds the supervisor's socket. */
export const INFRA_GUARD_FD = 3

/** What the infra's guardian `sh` is called in `ps`. */
export const INFRA_GUARD_NAME = 'podctl-infra-guard'

/** How often, and how many times, the guardian tries to end an infra that its runtime is still making. */
const RETRY_S = '0.1'
const RETRIES = 100

/**
 * The guardian's script: `$1` the runtime, `$2` its state root, `$3` the
 * infra's container id, `$4` the pid file its `run` writes; the rest is
 * the `run` command line, which the script execs, so that `$$` is the
 * runtime's pid. The watcher it leaves behind reads fd 3 to its end, then
 * kills the infra by the pid the runtime wrote, when that process is
 * still the runtime's child (a pid read long after its process ended may
 * name another one); while no pid is written yet it asks the runtime
 * (`kill ID KILL`, which also ends an infra made but not yet started),
 * and tries again while the runtime lives.
 */
const GUARD_SCRIPT = [
  `( ( trap '' INT HUP TERM QUIT`,
  `while read -r _; do :; done`,
  `i=0`,
  `while :; do`,
  `  p=`,
  // The runtime writes the pid without a newline, where read returns 1 with the pid read.
  `  if { read -r p || [ -n "$p" ]; } < "$4" && read -r _ _ _ pp _ < "/proc/$p/stat" && [ "$pp" = "$$" ]; then kill -s KILL "$p"; break; fi`,
  `  kill -0 "$$" || break`,
  `  "$1" --root "$2" kill "$3" KILL && break`,
  `  i=$((i + 1)); [ "$i" -ge ${RETRIES} ] && break`,
  `  sleep ${RETRY_S}`,
  `done ) <&${INFRA_GUARD_FD} >/dev/null 2>&1 & )`,
  `exec ${INFRA_GUARD_FD}<&-`,
  'shift 4',
  'exec "$@"',
].join('\n')

/**
 * The program and arguments that run the infra's `runtime run` (`run`,
 * with `pidFile` its --pid-file) under a guardian (GUARD_SCRIPT), for
 * the container `id` of the runtime at `runtime` whose state root is
 * `root`. Spawn them with fd INFRA_GUARD_FD a socket whose other end only
 * the supervisor holds.
 */
export const infraSpawnArgs = (run: readonly string[], guard: { runtime: string; root: string; id: string; pidFile: string }): [string, string[]] => [
  '/bin/sh',
  ['-c', GUARD_SCRIPT, INFRA_GUARD_NAME, guard.runtime, guard.root, guard.id, guard.pidFile, ...run],
]
