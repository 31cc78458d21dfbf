/**
 * A program run to its end with bounds it cannot escape: a time limit, a
 * limit on what it prints, and no wait on pipes that outlive it. The
 * program leads a process group of its own (spawned detached, so in its
 * own session), and the time limit kills that whole group: a child it
 * forked dies with it. Its end is its exit, not the close of its pipes:
 * a background process that inherited stdout and keeps it open is given
 * a moment to let go, then podctl stops reading, as Go's Cmd.WaitDelay
 * does. A process stuck in the kernel (a hung NFS mount) may outlive even
 * SIGKILL; then podctl neither waits for it nor keeps running for it.
 */
import { spawn } from 'node:child_process'
import { killGroup } from './signal.js'

export interface BoundedRunOptions {
  /** What the program reads on stdin (it may exit without reading it). */
  input: string
  /** Its whole process group is killed after this long. */
  timeoutMs: number
  /** More on stdout than this kills it (what it said is not kept). */
  maxStdoutBytes: number
  /** How much of the end of stderr is kept. */
  stderrTailChars?: number
  /** Aborting kills its group at once (a controller that stops). */
  signal?: AbortSignal
  /** How long after its exit the pipes may stay open before podctl stops reading them. */
  pipeGraceMs?: number
  /** Its environment (default: this process's). */
  env?: NodeJS.ProcessEnv
  /** Told its pid as soon as it is spawned (the leader of its process group), before it has run long. */
  onSpawn?: (pid: number) => void
}

export interface BoundedRunResult {
  status: number | null
  signal: NodeJS.Signals | null
  stdout: Buffer
  /** The end of its stderr. */
  stderr: string
  /** Why it could not start: no such file, not executable. */
  startError?: string
  /** Why it was killed: it took too long, said too much, or was stopped. */
  killedFor?: string
}

const PIPE_GRACE_MS = 250

/**
 * Runs `program args...`; resolves when it has exited and its pipes are
 * read (or given up on), or at once when it is killed. Never rejects.
 */
export const runBounded = (program: string, args: string[], opts: BoundedRunOptions): Promise<BoundedRunResult> =>
  new Promise((resolve) => {
    const child = spawn(program, args, { stdio: ['pipe', 'pipe', 'pipe'], detached: true, ...(opts.env !== undefined ? { env: opts.env } : {}) })
    const out: Buffer[] = []
    let outBytes = 0
    let stderr = ''
    const tail = opts.stderrTailChars ?? 4000
    let exit: { status: number | null; signal: NodeJS.Signals | null } | undefined
    let killedFor: string | undefined
    let startError: string | undefined
    let done = false
    const timers: NodeJS.Timeout[] = []

    const finish = (): void => {
      if (done) return
      done = true
      for (const t of timers) clearTimeout(t)
      opts.signal?.removeEventListener('abort', onAbort)
      // Whatever still holds the pipes (a leftover of the group, a child
      // stuck in the kernel) no longer holds this process.
      for (const s of [child.stdin, child.stdout, child.stderr]) s?.destroy()
      if (exit === undefined) child.unref()
      resolve({ status: exit?.status ?? null, signal: exit?.signal ?? null, stdout: Buffer.concat(out), stderr, ...(startError !== undefined ? { startError } : {}), ...(killedFor !== undefined ? { killedFor } : {}) })
    }
    const kill = (why: string): void => {
      if (done) return
      killedFor ??= why
      killGroup(child.pid, 'SIGKILL')
      finish()
    }
    const onAbort = (): void => kill('was stopped (podctl is stopping)')

    timers.push(setTimeout(() => kill(`took longer than ${opts.timeoutMs / 1000}s and was killed`), opts.timeoutMs))
    if (child.pid !== undefined && opts.onSpawn !== undefined) {
      try {
        opts.onSpawn(child.pid)
      } catch (er) {
        return kill(`was killed: ${(er as Error).message}`)
      }
    }
    if (opts.signal?.aborted) return kill('was stopped (podctl is stopping)')
    opts.signal?.addEventListener('abort', onAbort, { once: true })

    child.stdout.on('data', (b: Buffer) => {
      outBytes += b.length
      if (outBytes > opts.maxStdoutBytes) {
        out.length = 0 // not an answer: nothing of it is kept
        return kill(`printed more than ${opts.maxStdoutBytes} bytes and was killed`)
      }
      out.push(b)
    })
    child.stderr.on('data', (b: Buffer) => {
      stderr = (stderr + b.toString('utf8')).slice(-tail)
    })
    // A program that exits without reading its input closes the pipe under us: its exit status tells.
    child.stdin.on('error', () => {})
    child.stdin.end(opts.input)
    child.on('error', (er: NodeJS.ErrnoException) => {
      if (child.pid !== undefined) return
      startError = er.code === 'ENOENT' ? 'no such file' : er.code === 'EACCES' ? 'not executable' : er.message
      finish()
    })
    child.on('exit', (status, signal) => {
      exit = { status, signal }
      if (done) return
      // What it wrote before it exited is in the pipe already; read it
      // (setImmediate: after the poll phase that reads it), then stop.
      const grace = Math.max(0, opts.pipeGraceMs ?? PIPE_GRACE_MS)
      timers.push(setTimeout(() => setImmediate(finish), grace))
    })
    child.on('close', finish)
  })
