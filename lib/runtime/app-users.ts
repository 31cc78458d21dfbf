/**
 * Who an isolated app's process is (CONTRACT §10, §13, §15), as podman
 * works it out: its user and group, looked up in the image's own
 * /etc/passwd and /etc/group for an image app (the host's for an app of
 * host programs), with the supplementary groups the group file gives the
 * user. podman's rules, seen side by side:
 *
 * - a user named (by name or number) with a passwd entry: its gid, and
 *   the groups it is a member of, its gid among them;
 * - no user at all (root by default): root's memberships only;
 * - a group named: that group alone;
 * - a uid without a passwd entry: its group (0 unless named), and a
 *   passwd entry `UID:*:UID:GID:container user:WORKDIR:/bin/sh` added to
 *   the image app's /etc/passwd, so that whoami and friends work; its
 *   HOME is the working directory (`/` unless one is set);
 * - a group given as a number the image's /etc/group lacks (or, with no
 *   group given, a user given as a number that no group has) gets a line
 *   `GID:x:GID:USER` there (podman 4.3's rule, USER as it was written).
 *
 * Image files are read without following a link the image planted.
 */
import path from 'node:path'
import { resolveInside } from '../fs/inside.js'
import { readOwnFile } from '../fs/read.js'
import type { ProcessUser } from './generate/facts.js'

/** A passwd or group file of an image is small; a bound on what is read as one. */
const MAX_DB_BYTES = 4 * 1024 * 1024
const NUMERIC = /^\d+$/

/** The lines of a passwd or group file, split into fields. */
export type DbLines = string[][]

/** The lines of `etc/NAME` below `root`; none when it is missing, a link, or too large. */
export const readDb = (root: string, name: 'passwd' | 'group'): DbLines => {
  const file = resolveInside(root, path.join('etc', name))
  if (file === undefined) return []
  const f = readOwnFile(file, MAX_DB_BYTES)
  return 'bytes' in f ? parseDb(f.bytes.toString('utf8')) : []
}

export const parseDb = (text: string): DbLines => text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).map((l) => l.split(':'))

/** A user as asked (manifest or image config) and what the databases say of it. */
export interface UserQuery {
  user?: string | undefined
  group?: string | undefined
}

/** The user, and the lines the app's root must gain for it (a uid or gid the image does not list). */
export interface ResolvedUser {
  user: ProcessUser
  passwdLine?: string
  groupLine?: string
}

const gidOf = (groups: DbLines, group: string): number | undefined => {
  const e = groups.find((f) => f.length >= 3 && (NUMERIC.test(group) ? f[2] === group : f[0] === group))
  if (e) return Number(e[2])
  return NUMERIC.test(group) ? Number(group) : undefined
}

/** The gids of the groups whose member list names `name`. */
const memberships = (groups: DbLines, name: string | undefined): number[] =>
  name === undefined ? [] : groups.filter((f) => f.length >= 4 && f[3]!.split(',').includes(name) && NUMERIC.test(f[2]!)).map((f) => Number(f[2]))

const unique = (ids: number[]): number[] => [...new Set(ids)]

/** The group line podman adds for `q`: its group, or its user where it names none, when that is a number the group file lacks. */
const groupLineOf = (q: UserQuery, groups: DbLines): string | undefined => {
  if (q.user === undefined || q.user === '') return undefined
  const group = q.group !== undefined && q.group !== '' ? q.group : q.user
  if (!NUMERIC.test(group) || groups.some((f) => f[0] === group || f[2] === group)) return undefined
  return `${Number(group)}:x:${Number(group)}:${q.user}`
}

/**
 * Resolves `q` against a passwd and a group database; `workdir` is the
 * app's working directory, the home of a uid without an entry. Throws a
 * one-line Error for a name neither knows.
 */
export const resolveUser = (q: UserQuery, passwd: DbLines, groups: DbLines, workdir = '/'): ResolvedUser => {
  const named = q.user !== undefined && q.user !== ''
  const spec = named ? q.user! : '0'
  const entry = passwd.find((f) => f.length >= 4 && (NUMERIC.test(spec) ? f[2] === spec : f[0] === spec))
  if (entry === undefined && !NUMERIC.test(spec)) throw new Error(`no user named ${JSON.stringify(spec)} in /etc/passwd`)
  const uid = entry ? Number(entry[2]) : Number(spec)
  let gid = entry ? Number(entry[3]) : 0
  let additional: number[]
  if (q.group !== undefined && q.group !== '') {
    const g = gidOf(groups, q.group)
    if (g === undefined) throw new Error(`no group named ${JSON.stringify(q.group)} in /etc/group`)
    gid = g
    additional = [g]
  } else if (entry === undefined) {
    additional = named ? [gid] : []
  } else {
    additional = unique([...(named ? [gid] : []), ...memberships(groups, entry[0])])
  }
  const user: ProcessUser = {
    uid,
    gid,
    additionalGids: additional,
    home: entry?.[5] || (!named ? '/root' : workdir),
    ...(entry ? { name: entry[0]! } : {}),
  }
  const groupLine = groupLineOf(q, groups)
  return {
    user,
    ...(entry || !named ? {} : { passwdLine: `${uid}:*:${uid}:${gid}:container user:${workdir}:/bin/sh` }),
    ...(groupLine !== undefined ? { groupLine } : {}),
  }
}

/**
 * An app of host programs: the host's /etc/passwd and /etc/group, which
 * its pod's root shows it. A user the host knows only through another
 * name service (LDAP) is `fallback`, as the name service gave it at
 * prepare, with no supplementary groups.
 */
export const resolveHostUser = (q: UserQuery, fallback: { uid: number; gid: number; name?: string; home?: string } | undefined): ProcessUser => {
  try {
    return resolveUser(q, readDb('/', 'passwd'), readDb('/', 'group')).user
  } catch (er) {
    if (fallback === undefined) throw er
    return { uid: fallback.uid, gid: fallback.gid, additionalGids: [fallback.gid], home: fallback.home ?? '/', ...(fallback.name ? { name: fallback.name } : {}) }
  }
}
