/**
 * Users and groups by name or number, as the system knows them. Node has
 * no getpwnam(3); `getent` asks the system's own name service (files, LDAP,
 * systemd-userdb, whatever nsswitch.conf says), as the C library would,
 * and /etc/passwd and /etc/group are read where there is no getent.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'

export interface UserEntry {
  name: string
  uid: number
  /** The user's primary group. */
  gid: number
  home: string
}

export interface GroupEntry {
  name: string
  gid: number
}

const NUMERIC = /^\d+$/
/** A user or group as a manifest may name it: a POSIX portable name, or a number. */
export const ID_NAME_RE = /^(?:\d+|[A-Za-z_][A-Za-z0-9._-]{0,31}\$?)$/

/** The fields of the entry `key` in database `db`, or undefined if there is none. */
const lookUp = (db: 'passwd' | 'group', key: string): string[] | undefined => {
  const r = spawnSync('getent', [db, key], { encoding: 'utf8', timeout: 10_000 })
  if (r.error === undefined && (r.status === 0 || r.status === 2)) {
    const line = r.stdout.split('\n')[0]
    return r.status === 0 && line ? line.split(':') : undefined
  }
  // No getent here: the files, as the C library's "files" service reads them.
  let text: string
  try {
    text = fs.readFileSync(`/etc/${db}`, 'utf8')
  } catch {
    return undefined
  }
  const field = NUMERIC.test(key) ? 2 : 0
  return text
    .split('\n')
    .map((l) => l.split(':'))
    .find((f) => f.length > 2 && f[field] === key)
}

const asId = (s: string | undefined): number | undefined => (s !== undefined && NUMERIC.test(s) ? Number(s) : undefined)

/** The user named (or numbered) `spec`, or undefined if the system has none. */
export const lookUpUser = (spec: string): UserEntry | undefined => {
  const f = lookUp('passwd', spec)
  const uid = asId(f?.[2])
  const gid = asId(f?.[3])
  return f && uid !== undefined && gid !== undefined ? { name: f[0]!, uid, gid, home: f[5] ?? '/' } : undefined
}

/** The group named (or numbered) `spec`, or undefined if the system has none. */
export const lookUpGroup = (spec: string): GroupEntry | undefined => {
  const f = lookUp('group', spec)
  const gid = asId(f?.[2])
  return f && gid !== undefined ? { name: f[0]!, gid } : undefined
}
