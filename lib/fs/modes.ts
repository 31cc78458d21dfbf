import fs from 'node:fs'

/** Modes of everything podctl creates under a data dir (CONTRACT §1). */
export const DIR_MODE = 0o750
export const FILE_MODE = 0o640

/**
 * Lets everyone pass through (never list or write) each of `dirs` that
 * does not allow it yet: what an app running as another user needs of the
 * directories above its own (its root, its volumes). Links are not
 * followed; what is not a directory is left alone.
 */
export const allowTraverse = (dirs: readonly string[]): void => {
  for (const d of dirs) {
    const st = fs.lstatSync(d, { throwIfNoEntry: false })
    if (st?.isDirectory() && (st.mode & 0o001) === 0) fs.chmodSync(d, (st.mode & 0o7777) | 0o001)
  }
}
