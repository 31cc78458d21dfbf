/**
 * What the bundled CLI gives commander for `require('node:child_process')`
 * (lib/build/bundle.ts). commander spawns a process only for executable
 * subcommands, which podctl does not have, but requires child_process when
 * it loads, and Node's child_process loads a dozen internal modules: a
 * cost every command would pay for nothing. This loads it on first use.
 */
import { createRequire } from 'node:module'

type ChildProcessModule = typeof import('node:child_process')
let real: ChildProcessModule | undefined
const load = (): ChildProcessModule => (real ??= createRequire(import.meta.url)('node:child_process') as ChildProcessModule)

/** commander's one use of child_process. */
export const spawn = ((...args: Parameters<ChildProcessModule['spawn']>) => load().spawn(...args)) as ChildProcessModule['spawn']
