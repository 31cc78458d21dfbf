/**
 * fs-extra, loaded on first use: it loads all of its modules at once,
 * which costs more than most podctl commands do (Documentation/performance.md),
 * and only rare paths need it (a data dir's first creation, test
 * failpoints). Inside a data dir podctl never uses it: its tree walks
 * follow what they find, and the safe primitives of lib/fs/ do not
 * (Documentation/devel/layers.md says which is used where).
 */
import { createRequire } from 'node:module'

type FsExtra = typeof import('fs-extra')
let loaded: FsExtra | undefined

// In the bundled CLI `require` exists and esbuild bundles what it names
// (loaded when first called); as an ES module there is no `require`.
export const fsExtra = (): FsExtra =>
  (loaded ??= (typeof require === 'function' ? require('fs-extra') : createRequire(import.meta.url)('fs-extra')) as FsExtra)
