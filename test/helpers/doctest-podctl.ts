/**
 * The doc-test's podctl. A page's `$ podctl …` runs in a real bash, where
 * `podctl` is the script podctlScript() writes: it asks this test process,
 * over a TCP connection to 127.0.0.1, to run the command in its podctl
 * thread (podctl-thread.ts), in the script's directory and environment,
 * and prints the answer: what the command printed, stdout and stderr in
 * the order written (the page shows them together), and its exit code.
 * Any local user can connect to 127.0.0.1, and the test process is often
 * root: a request must begin with the server's secret, which only the
 * script holds (mode 0700, its owner's). A
 * command that needs a process of its own (cli-util.ts) is answered
 * "spawn", and the script runs bin/podctl itself, as it does when nobody
 * answers. A Node started for each command of the pages cost about 58 s of
 * CPU in a whole `npm test` (Documentation/performance.md).
 */
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import net from 'node:net'
import { needsOwnProcess } from './cli-util.js'
import { BIN } from './common.js'
import { podctlInThread } from './podctl-thread.js'

/** What the script sends: the secret, its directory, its limits and umask, the argument count, the arguments, then `env -0`, then one NUL more. */
interface Request {
  cwd: string
  limits: string
  args: string[]
  env: NodeJS.ProcessEnv
}

/** What a bash of this process prints for `ulimit -a; umask`: a script whose differ (`ulimit -n 40; podctl …`) runs bin/podctl. */
export const OWN_LIMITS = spawnSync('bash', ['--norc', '--noprofile', '-c', 'ulimit -a; umask'], { encoding: 'utf8' }).stdout.replace(/\n$/, '')

/** The request in `bytes`, once all of it has come. */
const parseRequest = (bytes: Buffer): Request | undefined => {
  if (bytes.length < 2 || bytes[bytes.length - 1] !== 0 || bytes[bytes.length - 2] !== 0) return undefined
  const fields = bytes.toString('utf8').split('\0')
  const [, cwd, limits, count] = fields
  const argc = Number(count)
  const rest = fields.slice(4 + argc)
  const end = rest.indexOf('')
  // An empty argument can also make two NULs in a row: the request is whole when the environment ends it.
  if (cwd === undefined || limits === undefined || !Number.isInteger(argc) || end < 0 || end !== rest.length - 2) return undefined
  const env = Object.fromEntries(rest.slice(0, end).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]))
  return { cwd, limits, args: fields.slice(4, 4 + argc), env }
}

/** Runs the command in the thread, in the script's directory (the process's, which the thread shares, for that time). */
const answer = (req: Request): Buffer => {
  if (needsOwnProcess(req.args) || req.limits !== OWN_LIMITS) return Buffer.from('spawn\n')
  const here = process.cwd()
  process.chdir(req.cwd)
  try {
    const r = podctlInThread(req.args, req.env, true)
    return Buffer.concat([Buffer.from(`${r.status}\n`), Buffer.from(r.stdout)])
  } finally {
    process.chdir(here)
  }
}

/** Where the script asks, and the secret it must send first. */
export interface DocPodctlServer {
  port: number
  secret: string
}

/** Listens for the script's requests until the test process ends. */
export const serveDocPodctl = async (): Promise<DocPodctlServer> => {
  const secret = randomBytes(16).toString('hex')
  const opening = Buffer.from(`${secret}\0`)
  const server = net.createServer((socket) => {
    let bytes = Buffer.alloc(0)
    socket.on('error', () => {})
    socket.on('data', (b: Buffer) => {
      bytes = Buffer.concat([bytes, b])
      // Whoever does not open with the secret is cut off at its first wrong byte.
      const head = Math.min(bytes.length, opening.length)
      if (!bytes.subarray(0, head).equals(opening.subarray(0, head))) return void socket.destroy()
      const req = parseRequest(bytes)
      if (req !== undefined) socket.end(answer(req))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  server.unref()
  return { port: (server.address() as net.AddressInfo).port, secret }
}

/**
 * The `podctl` a page's bash finds first on its PATH. Its own stderr goes
 * nowhere while it connects (bash would say why it could not), and
 * bin/podctl runs without tap's NODE_OPTIONS and NODE_EXTRA_CA_CERTS, as
 * cli-util.ts runs it.
 */
export const podctlScript = ({ port, secret }: DocPodctlServer): string => `#!/bin/bash
{ exec 3<>/dev/tcp/127.0.0.1/${port}; } 2>/dev/null && {
  { printf '%s\\0' ${secret} "$PWD" "$(ulimit -a; umask)" "$#" "$@"; env -0; printf '\\0'; } >&3
  IFS= read -r status <&3
  case $status in
    spawn | '') ;;
    *) cat <&3; exit "$status" ;;
  esac
}
exec /usr/bin/env -u NODE_OPTIONS -u NODE_EXTRA_CA_CERTS ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} "$@"
`
