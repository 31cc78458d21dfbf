/** This process's resource limits and use, from /proc (undefined where there is none). */
import fs from 'node:fs'

/** The soft limit named `name` in /proc/self/limits ("Max open files"), or undefined if unlimited or unknown. */
export const softLimit = (name: string): number | undefined => {
  let text: string
  try {
    text = fs.readFileSync('/proc/self/limits', 'latin1')
  } catch {
    return undefined
  }
  const line = text.split('\n').find((l) => l.startsWith(name))
  const soft = line?.slice(name.length).trim().split(/\s+/)[0]
  return soft !== undefined && /^\d+$/.test(soft) ? Number(soft) : undefined
}

/** How many files this process has open now. */
export const openFileCount = (): number | undefined => {
  try {
    return fs.readdirSync('/proc/self/fd').length
  } catch {
    return undefined
  }
}

/** The kernel's limit on one argument or environment string (MAX_ARG_STRLEN: 32 pages). */
export const MAX_ARG_STRLEN = 32 * 4096

/**
 * The kernel's limit on all arguments and environment strings of an
 * exec together: a quarter of the stack limit (at least 32 pages, and
 * Linux's 6 MiB cap when the stack is unlimited).
 */
export const argMax = (): number => {
  const stack = softLimit('Max stack size')
  return stack === undefined ? 6 * 1024 * 1024 : Math.max(MAX_ARG_STRLEN, Math.floor(stack / 4))
}

/**
 * Why exec would refuse these arguments and this environment (E2BIG), in
 * one line naming the limit, or undefined if it would not.
 */
export const execSizeProblem = (argv: readonly string[], env: NodeJS.ProcessEnv): string | undefined => {
  let total = 0
  const strings = [...argv, ...Object.entries(env).map(([k, v]) => `${k}=${v ?? ''}`)]
  for (const s of strings) {
    const bytes = Buffer.byteLength(s) + 1
    if (bytes > MAX_ARG_STRLEN) {
      return `${JSON.stringify(s.slice(0, 20))}… is ${bytes} bytes; the kernel takes at most ${MAX_ARG_STRLEN} bytes for one argument or variable (MAX_ARG_STRLEN)`
    }
    total += bytes + 8 // and its pointer
  }
  const max = argMax()
  if (total > max) return `its arguments and environment take ${total} bytes; the kernel takes at most ${max} here (a quarter of the stack limit, ulimit -s)`
  return undefined
}
