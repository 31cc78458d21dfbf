/**
 * The private id range of `"userns": "private"` pods (CONTRACT §12): 65,536
 * uids and gids from the /etc/subuid and /etc/subgid entries of the user
 * `podctl`, as podman's `--userns auto` takes them from its own user's. The
 * pod's root is the range's first id; no id of the host maps into it.
 */
import fs from 'node:fs'
import { PodctlError } from '../errors.js'
import { lookUpUser } from '../proc/users.js'
import type { IdMap } from './generate/facts.js'

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

/**
 * Whose ids a pod's processes have, worked out once per pod: the host's
 * (root, `userns: host`: no map), the invoking user's alone (rootless:
 * that user is root in the pod, and no one else is mapped), or a private
 * range (root, `userns: private`). `shift` is where the pod's uid and gid
 * 0 are on the host when root gave it a range: what its files are given
 * to (its roots, its volumes, its renders).
 */
export interface PodIds {
  map?: IdMap
  shift?: { uid: number; gid: number }
  rootless: boolean
}

export const podIds = (m: { userns?: 'host' | 'private' }): PodIds => {
  if (process.geteuid?.() !== 0) {
    const map: IdMap = { uid: [{ containerID: 0, hostID: process.geteuid!(), size: 1 }], gid: [{ containerID: 0, hostID: process.getegid!(), size: 1 }] }
    return { map, rootless: true }
  }
  if (m.userns !== 'private') return { rootless: false }
  const map = privateIdRange()
  return { map, shift: { uid: map.uid[0]!.hostID, gid: map.gid[0]!.hostID }, rootless: false }
}
