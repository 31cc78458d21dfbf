// The options of the bench scripts (`--pods 3000`, `--json`), parsed by
// node's util.parseArgs. One table for all of them: each script reads the
// ones it knows.
import { parseArgs } from 'node:util'

const STRINGS = ['pods', 'reps', 'base', 'only', 'dir', 'mb', 'child', 'child-way', 'child-list', 'claims', 'exec-claims', 'failovers', 'idle-s', 'kills', 'nodes', 'sim-nodes', 'sim-pods', 'churn', 'sim-s']
const FLAGS = ['json', 'run-child']

let values
const parsed = () =>
  (values ??= parseArgs({
    args: process.argv.slice(2),
    options: Object.fromEntries([...STRINGS.map((n) => [n, { type: 'string' }]), ...FLAGS.map((n) => [n, { type: 'boolean' }])]),
    strict: false,
    allowPositionals: true,
  }).values)

/** The value of `--name`, or `dflt` when it is not given. */
export const option = (name, dflt) => {
  const v = parsed()[name.replace(/^--/, '')]
  return typeof v === 'string' ? v : dflt
}

/** Whether the flag `--name` is given. */
export const flag = (name) => parsed()[name.replace(/^--/, '')] === true
