/**
 * A pod as a user names it on a command line: its UUID or an unambiguous
 * prefix of one (CONTRACT §4), as rkt names pods. A pod's name is a label,
 * not a key: several pods may carry it (manifest.md), so it never picks a
 * pod. But a podman user types one (`podctl stop web`), and then the error
 * says which pods carry that name and in which state, so that the next
 * command is one copy away.
 */
import { PodctlError, isPodctlError } from '../errors.js'
import { isPodUUID } from './layout.js'
import { NAME_RE } from './manifest.js'
import { podFromUUIDString, type Pod } from './pod.js'
import { Include, listPods } from './walk.js'

/** How many pods a hint names before it says how many more there are. */
const MAX_NAMED = 5

/** The pods whose name is `name`, newest first, as "UUID8 (state)". */
const podsNamed = (dataDir: string, name: string): string[] => {
  const found: { uuid: string; state: string; created: string }[] = []
  for (const pod of listPods(dataDir, Include.all)) {
    try {
      const r = pod.record()
      if (r.name === name) found.push({ uuid: pod.uuid, state: pod.state, created: r.created_at ?? '' })
    } catch {
      // a pod that went meanwhile, or whose record cannot be read, is not named
    } finally {
      pod.close()
    }
  }
  return found.sort((a, b) => b.created.localeCompare(a.created) || a.uuid.localeCompare(b.uuid)).map((p) => `${p.uuid.slice(0, 8)} (${p.state})`)
}

/**
 * The pod `arg` names (podFromUUIDString). When it names none (EUSAGE for
 * what is not a UUID, ENOPOD for no match) and pods are named `arg`, the
 * same error, with a hint that lists their UUIDs.
 */
export const podFromArg = (dataDir: string, arg: string): Pod => {
  try {
    return podFromUUIDString(dataDir, arg)
  } catch (er) {
    if (!isPodctlError(er) || (er.code !== 'EUSAGE' && er.code !== 'ENOPOD')) throw er
    // Only what could be a pod's name is looked for, so that a script's gone UUIDs cost no scan.
    if (!NAME_RE.test(arg) || isPodUUID(arg)) throw er
    let named: string[]
    try {
      named = podsNamed(dataDir, arg)
    } catch {
      throw er // the data dir cannot be read: the first error says what matters
    }
    if (named.length === 0) throw er
    const shown = named.slice(0, MAX_NAMED).join(', ') + (named.length > MAX_NAMED ? ` and ${named.length - MAX_NAMED} more` : '')
    throw new PodctlError(er.code, er.message, `names are not unique, so give a UUID; ${named.length === 1 ? 'the pod' : `the ${named.length} pods`} named ${arg}: ${shown}`)
  }
}
