/**
 * The private id range of `"userns": "private"` pods (CONTRACT §12): 65,536
 * uids and gids from the /etc/subuid and /etc/subgid entries of the user
 * `podctl`, as podman's `--userns auto` takes them from its own user's. The
 * pod's root is the range's first id; no id of the host maps into it.
 */
import fs from 'node:fs'
import { PodctlError } from '../errors.js'
import { lookUpUser } from '../proc/users.js'
import type { IdMap } from './spec.js'

/** The user whose subordinate ids private pods use. */
export const SUBID_USER = 'podctl'
/** How many ids a private pod maps: a whole 16-bit range, as a distribution's users need. */
export const PRIVATE_RANGE = 65536

/** The first range of at least PRIVATE_RANGE ids that `file` gives the user (by name or uid), if any. */
export const subordinateRange = (text: string, names: readonly string[]): number | undefined => {
  for (const line of text.split('\n')) {
    const [owner, start, count] = line.trim().split(':')
    if (owner === undefined || !names.includes(owner)) continue
    const s = Number(start)
    const n = Number(count)
    if (Number.isSafeInteger(s) && s > 0 && Number.isSafeInteger(n) && n >= PRIVATE_RANGE) return s
  }
  return undefined
}

const readOr = (file: string): string => {
  try {
    return fs.readFileSync(file, 'utf8')
  } catch {
    return ''
  }
}

/** The private range, or EFAILED with the lines to add to /etc/subuid and /etc/subgid. */
export const privateIdRange = (subuid = '/etc/subuid', subgid = '/etc/subgid'): IdMap => {
  const user = lookUpUser(SUBID_USER)
  const names = [SUBID_USER, ...(user ? [String(user.uid)] : [])]
  const uid = subordinateRange(readOr(subuid), names)
  const gid = subordinateRange(readOr(subgid), names)
  if (uid === undefined || gid === undefined) {
    const missing = [uid === undefined ? subuid : undefined, gid === undefined ? subgid : undefined].filter((f) => f !== undefined)
    throw new PodctlError(
      'EFAILED',
      `a pod with "userns": "private" needs ${PRIVATE_RANGE} subordinate ids of the user ${SUBID_USER}, and ${missing.join(' and ')} ${missing.length > 1 ? 'give' : 'gives'} it none`,
      `add a range no other user has, such as: echo ${SUBID_USER}:500000000:${PRIVATE_RANGE} | tee -a ${subuid} ${subgid}`,
    )
  }
  return { uid: [{ containerID: 0, hostID: uid, size: PRIVATE_RANGE }], gid: [{ containerID: 0, hostID: gid, size: PRIVATE_RANGE }] }
}

/** Where a pod's uid and gid 0 are on the host, when it has ids of its own as root (`userns: private`); else undefined. */
export const podIdShift = (m: { userns?: 'host' | 'private' }): { uid: number; gid: number } | undefined => {
  if (m.userns !== 'private' || process.geteuid?.() !== 0) return undefined
  const r = privateIdRange()
  return { uid: r.uid[0]!.hostID, gid: r.gid[0]!.hostID }
}
