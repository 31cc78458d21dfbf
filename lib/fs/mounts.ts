/**
 * Mount points below a directory, and taking them down without following
 * a link. Node has no mount(2) or umount2(2); util-linux's umount(8) does
 * the call. The mount point is never named to it by its path: it is opened
 * from the directory, one component at a time and never through a link
 * (lib/fs/dir.ts), and umount is given `/proc/<our pid>/fd/<fd>`, which the
 * kernel resolves to that open directory whatever the path leads to now.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { Dir } from './dir.js'

/** mountinfo escapes space, tab, newline and backslash as octal (\040). */
const unescape = (s: string): string => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)))

/** A mount of this process's mount namespace: where, and what kind of file system. */
export interface MountEntry {
  point: string
  fstype: string
}

/** Every mount of this process's mount namespace, from /proc/self/mountinfo. */
export const mounts = (): MountEntry[] => {
  let text: string
  try {
    text = fs.readFileSync('/proc/self/mountinfo', 'utf8')
  } catch {
    return []
  }
  const out: MountEntry[] = []
  for (const line of text.split('\n')) {
    const fields = line.split(' ')
    const point = fields[4]
    // The optional fields end with "-"; the file system type follows it.
    const dash = fields.indexOf('-', 6)
    if (point !== undefined && dash > 0) out.push({ point: unescape(point), fstype: fields[dash + 1] ?? '' })
  }
  return out
}

/** Every mount point of this process's mount namespace. */
export const mountPoints = (): string[] => mounts().map((m) => m.point)

/** The mount points strictly below `dir` (an absolute path without links), deepest first. */
export const mountsBelow = (dir: string, points: readonly string[] = mountPoints()): string[] => {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`
  return points.filter((p) => p.startsWith(prefix)).sort((a, b) => b.split('/').length - a.split('/').length || b.localeCompare(a))
}

/**
 * Detaches the mount at `rel` below `root` (umount -l: what is still open
 * in it keeps working, and it goes when that closes, as containers/storage
 * does with an overlay). The way from `root` to it is opened without
 * following a link: a link there is an error (ELOOP), not a way out.
 */
export const detachMount = (root: string, rel: string): void => {
  const parts = rel.split('/').filter((p) => p !== '')
  let cur = Dir.open(root)
  try {
    for (const name of parts) {
      const next = cur.openDir(name)
      cur.close()
      cur = next
    }
    const r = spawnSync('umount', ['--lazy', '--no-canonicalize', `/proc/${process.pid}/fd/${cur.fd}`], { encoding: 'utf8' })
    if (r.error !== undefined || r.status !== 0) {
      const why = r.error?.message ?? (r.stderr.trim() || `umount exited with ${r.status}`)
      throw new PodctlError('EFAILED', `cannot unmount ${path.join(root, ...parts)}: ${why}`, 'unmount it by hand (umount -l PATH) and try again')
    }
  } finally {
    cur.close()
  }
}

/** `dir` as the mount table spells it (links above it resolved), or undefined if it is gone. */
export const realDir = (dir: string): string | undefined => {
  try {
    return fs.realpathSync(dir)
  } catch {
    return undefined
  }
}
