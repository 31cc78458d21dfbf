/**
 * Who an app from an image runs as (CONTRACT §13): its user and group are
 * the image's, looked up in the image's own /etc/passwd and /etc/group (as
 * podman does), not the host's. Numbers are taken as they are. The files
 * are read without following a link the image planted.
 */
import path from 'node:path'
import { resolveInside } from '../fs/inside.js'
import { readOwnFile } from '../fs/read.js'

export interface ImageUser {
  uid: number
  gid: number
  home?: string
  name?: string
}

/** A passwd or group file of an image is small; a bound on what is read as one. */
const MAX_DB_BYTES = 4 * 1024 * 1024
const NUMERIC = /^\d+$/

/** The lines of `etc/NAME` in the image's root, split into fields; none when it is missing, a link, or too large. */
const entries = (rootfs: string, name: 'passwd' | 'group'): string[][] => {
  const file = resolveInside(rootfs, path.join('etc', name))
  if (file === undefined) return []
  const f = readOwnFile(file, MAX_DB_BYTES)
  return 'bytes' in f ? f.bytes.toString('utf8').split('\n').map((l) => l.split(':')) : []
}

/**
 * The uid and gid of `user`/`group` in the image at `rootfs`: root's when
 * neither is given; a name the image does not know is an error in words.
 */
export const imageUser = (rootfs: string, user: string | undefined, group: string | undefined): ImageUser => {
  let out: ImageUser = { uid: 0, gid: 0, home: '/root', name: 'root' }
  if (user !== undefined) {
    const e = entries(rootfs, 'passwd').find((f) => f.length >= 4 && (NUMERIC.test(user) ? f[2] === user : f[0] === user))
    if (e) out = { uid: Number(e[2]), gid: Number(e[3]), name: e[0]!, ...(e[5] ? { home: e[5] } : {}) }
    // A uid the image does not list gets group 0, as podman and runc give it.
    else if (NUMERIC.test(user)) out = { uid: Number(user), gid: 0, home: '/' }
    else throw new Error(`no user named ${JSON.stringify(user)} in the image's /etc/passwd`)
  }
  if (group !== undefined) {
    const e = entries(rootfs, 'group').find((f) => f.length >= 3 && (NUMERIC.test(group) ? f[2] === group : f[0] === group))
    if (e) out = { ...out, gid: Number(e[2]) }
    else if (NUMERIC.test(group)) out = { ...out, gid: Number(group) }
    else throw new Error(`no group named ${JSON.stringify(group)} in the image's /etc/group`)
  }
  return out
}
