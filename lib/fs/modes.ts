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

/**
 * Lets the group `gid`, and no one else, pass through each of `dirs`
 * (the group becomes `gid`, with search permission; others gain
 * nothing): what the root of a pod with ids of its own (`userns:
 * private`), whose id is `gid` on the host, needs of the directories
 * above the roots its runtime enters, without opening them to every
 * host user (CONTRACT §12a). Links are not followed.
 */
export const allowGroupTraverse = (dirs: readonly string[], gid: number): void => {
  for (const d of dirs) {
    const st = fs.lstatSync(d, { throwIfNoEntry: false })
    if (!st?.isDirectory()) continue
    if (st.gid !== gid) fs.lchownSync(d, -1, gid)
    if ((st.mode & 0o010) === 0 || st.gid !== gid) fs.chmodSync(d, (st.mode & 0o7777) | 0o010)
  }
}
