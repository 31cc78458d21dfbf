/**
 * The command lines that need no commander: the plain forms of `list` and
 * `run -- CMD` that scripts run in loops. lib/cli/entry.ts checks every
 * command line against these before it loads anything else, so this
 * module imports nothing; anything not recognized here (other options,
 * help, --debug, a typo) goes to the full program.
 */
import type { ListOptions } from './list-output.js'
import type { RunOptions } from './run-action.js'

export interface PlainListRequest {
  dir?: string
  opts: ListOptions
}

/**
 * Recognizes the plain list command lines (`[--dir D] list [--format F]
 * [--full] [--no-legacy]`, in any order) that need no commander: returns
 * the data dir flag and options, or undefined for anything else (help,
 * --state, --debug, a typo), which the full program handles.
 */
export const plainListRequest = (argv: string[]): PlainListRequest | undefined => {
  const opts: ListOptions = { format: 'table', legacy: true }
  let dir: string | undefined
  let sawList = false
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    const eq = a.startsWith('--') ? a.indexOf('=') : -1
    const flag = eq > 0 ? a.slice(0, eq) : a
    const value = (): string | undefined => (eq > 0 ? a.slice(eq + 1) : argv[++i])
    if (a === 'list' && !sawList) sawList = true
    else if (flag === '--dir') dir = value()
    else if (flag === '--format' && sawList) opts.format = value() ?? ''
    else if (a === '--full' && sawList) opts.full = true
    else if (a === '--no-legacy' && sawList) opts.legacy = false
    else return undefined
  }
  if (!sawList || dir === '' || !['table', 'json', 'json-pretty'].includes(opts.format)) return undefined
  return { ...(dir !== undefined ? { dir } : {}), opts }
}

export interface PlainRunRequest {
  dir?: string
  opts: RunOptions
  command: string[]
}

/**
 * Recognizes `[--dir D] run [--detach] -- CMD [ARG...]`: returns the data
 * dir flag, the options and the command, or undefined for anything else
 * (other options, help, --debug), which the full program handles.
 */
export const plainRunRequest = (argv: string[]): PlainRunRequest | undefined => {
  const end = argv.indexOf('--')
  if (end < 0 || end === argv.length - 1) return undefined
  const opts: RunOptions = {}
  let dir: string | undefined
  let sawRun = false
  for (let i = 0; i < end; i++) {
    const a = argv[i]!
    if (a === 'run' && !sawRun) sawRun = true
    else if (a === '--dir' && !sawRun && i + 1 < end) dir = argv[++i]
    else if (a.startsWith('--dir=') && !sawRun) dir = a.slice('--dir='.length)
    else if (a === '--detach' && sawRun) opts.detach = true
    else return undefined
  }
  if (!sawRun || dir === '') return undefined
  return { ...(dir !== undefined ? { dir } : {}), opts, command: argv.slice(end + 1) }
}
