/**
 * What the bundled CLI gives for `require('assert')` (lib/build/bundle.ts
 * aliases it here). Its one user is signal-exit 3, proper-lockfile's
 * dependency, which calls `assert.equal(typeof cb, 'function', message)`
 * once per handler it registers. Node's assert loads four internal modules
 * (a cost for every command that takes a lock: Documentation/devel/build.md)
 * for that one check.
 */
export const equal = (actual: unknown, expected: unknown, message?: string): void => {
  // Loose equality, as assert.equal.
  // eslint-disable-next-line eqeqeq
  if (actual != expected) throw new Error(message ?? `${String(actual)} == ${String(expected)}`)
}
