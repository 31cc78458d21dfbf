/**
 * The one error type podctl raises on purpose. Every expected failure is a
 * PodctlError with a stable `code`; only lib/cli/main.ts turns codes into
 * exit codes. Anything else that escapes is a bug and shows its stack.
 */
export type ErrorCode =
  | 'EUSAGE' // bad flag, bad duration, invalid manifest
  | 'ENOPOD' // no such pod, or an ambiguous prefix
  | 'ENOVOLUME' // no such volume (persistent, or of the pod)
  | 'ENOIMAGE' // no such image (name, or digest prefix), or an ambiguous prefix
  | 'ENONETWORK' // no such network
  | 'EBADSTATE' // the pod is not in a state that allows the operation
  | 'ECHANGED' // the pod changed state under us: we lost a race
  | 'EIMMUTABLE' // a mutable-pod operation on an immutable pod
  | 'ETIMEOUT' // a wait ran out of time
  | 'EFAILED' // I/O error or another failure of the operation itself

const EXIT_CODES: Record<ErrorCode, number> = {
  EUSAGE: 2,
  ENOPOD: 3,
  ENOVOLUME: 3,
  ENOIMAGE: 3,
  ENONETWORK: 3,
  EBADSTATE: 4,
  ECHANGED: 4,
  EIMMUTABLE: 4,
  ETIMEOUT: 5,
  EFAILED: 1,
}

// Set on every PodctlError. The built CLI loads each command's code as a
// bundle of its own (lib/build/bundle.ts), with its own copy of this
// module, so the program that reports an error knows it by this mark
// rather than by its class.
const MARK = Symbol.for('podctl.PodctlError')

/** An expected failure; `hint` says what to do about it. */
export class PodctlError extends Error {
  readonly code: ErrorCode
  readonly hint?: string
  readonly [MARK] = true
  constructor(code: ErrorCode, message: string, hint?: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'PodctlError'
    this.code = code
    if (hint !== undefined) this.hint = hint
  }

  /** The process exit code CONTRACT §4 assigns to this failure. */
  get exitCode(): number {
    return EXIT_CODES[this.code]
  }
}

/** Whether `er` is a PodctlError, from this copy of the module or another (see MARK). */
export const isPodctlError = (er: unknown): er is PodctlError =>
  er instanceof PodctlError || (typeof er === 'object' && er !== null && (er as { [MARK]?: unknown })[MARK] === true)

/**
 * The loser of a race: the pod is no longer where (or what) the caller
 * expected, or another process holds its lock.
 */
export class PodChangedStateError extends PodctlError {
  readonly uuid: string
  constructor(uuid: string, message?: string, hint?: string) {
    super('ECHANGED', message ?? `pod ${uuid} changed state`, hint)
    this.name = 'PodChangedStateError'
    this.uuid = uuid
  }
}

/**
 * podctl's own failure while running a pod in the foreground: exit code
 * 125, so that scripts can tell it from the pod's exit code (as docker
 * and podman do).
 */
export class RunFailure extends PodctlError {
  constructor(message: string, hint?: string, options?: { cause?: unknown }) {
    super('EFAILED', message, hint, options)
    this.name = 'RunFailure'
  }

  override get exitCode(): number {
    return 125
  }
}

/** The message of rkt's ErrImmutable, kept so that scripts can match on it. */
export const IMMUTABLE_MESSAGE = 'immutable pod'

/** Thrown by sandboxManifest (lib/pod/sandbox.ts) for a pod whose manifest may not change. */
export class ErrImmutable extends PodctlError {
  constructor(uuid: string) {
    super(
      'EIMMUTABLE',
      `${IMMUTABLE_MESSAGE}: pod ${uuid} was not created mutable`,
      'only pods created with "mutable": true (podctl app sandbox) take app changes',
    )
    this.name = 'ErrImmutable'
  }
}

/** A broken invariant: podctl itself is wrong, not the input. */
export const bug = (message: string): Error => new Error(`bug: ${message}`)

/** The errno code of a Node.js system error, if it is one. */
export const errnoCode = (er: unknown): string | undefined =>
  er !== null && typeof er === 'object' && 'code' in er && typeof er.code === 'string'
    ? er.code
    : undefined

/**
 * Text from outside (a file's bytes quoted in a parser's message, a reason
 * read from a pod) as one printable line: control characters become
 * escapes, so that it cannot break a key=value line or drive a terminal.
 */
export const oneLine = (text: string): string =>
  // eslint-disable-next-line no-control-regex
  text.replace(/[\x00-\x1f\x7f]/g, (c) => (c === '\n' ? '\\n' : c === '\t' ? '\\t' : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`))

/** Whether `er` says a path is not there (ENOENT; ENOTDIR where a parent is a file). */
export const isNotFound = (er: unknown): boolean => {
  const code = errnoCode(er)
  return code === 'ENOENT' || code === 'ENOTDIR'
}

/** `fn()`, or undefined when what it reads is not there (ENOENT or ENOTDIR): any other error is thrown. */
export const unlessNotFound = <T>(fn: () => T): T | undefined => {
  try {
    return fn()
  } catch (er) {
    if (isNotFound(er)) return undefined
    throw er
  }
}

/** How a pod is named in messages and tables: the first 8 characters of its UUID (CONTRACT §4's list). */
export const shortId = (uuid: string): string => uuid.slice(0, 8)
