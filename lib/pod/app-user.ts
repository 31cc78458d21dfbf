/**
 * Who an app runs as (CONTRACT §10): the manifest's `user` and `group`
 * (names or numbers), resolved by the system's name service; without
 * them, the user podctl runs as. A user without a passwd entry (a bare
 * number) gets the group of the same number unless a group is given, never
 * root's group. Only root may run an app as someone else.
 */
import { lookUpGroup, lookUpUser } from '../proc/users.js'
import type { App, ManifestProblem, PodManifest } from './manifest.js'

export interface AppUser {
  uid: number
  gid: number
  /** From the passwd entry, when there is one: the app's HOME, USER and LOGNAME. */
  name?: string
  home?: string
}

const NUMERIC = /^\d+$/

/**
 * The uid and gid `app` runs with, or undefined when it names neither (it
 * runs as podctl does). Throws a one-line reason for a name the system
 * does not know.
 */
export const resolveAppUser = (app: Pick<App, 'user' | 'group'>): AppUser | undefined => {
  if (app.user === undefined && app.group === undefined) return undefined
  let out: AppUser
  if (app.user === undefined) {
    out = { uid: process.geteuid?.() ?? 0, gid: process.getegid?.() ?? 0 }
  } else {
    const u = lookUpUser(app.user)
    if (u) out = { uid: u.uid, gid: u.gid, name: u.name, home: u.home }
    else if (NUMERIC.test(app.user)) out = { uid: Number(app.user), gid: Number(app.user) }
    else throw new Error(`no user named ${JSON.stringify(app.user)} on this system`)
  }
  if (app.group !== undefined) {
    const g = lookUpGroup(app.group)
    if (g) out.gid = g.gid
    else if (NUMERIC.test(app.group)) out.gid = Number(app.group)
    else throw new Error(`no group named ${JSON.stringify(app.group)} on this system`)
  }
  return out
}

/** Whether this process may run a process as `u` (root may; anyone may run as themself). */
export const maySwitchTo = (u: AppUser): boolean => {
  const euid = process.geteuid?.() ?? 0
  return euid === 0 || (u.uid === euid && u.gid === (process.getegid?.() ?? 0))
}

/**
 * The problems of the apps' users and groups on this host, checked at
 * prepare time: names the system does not know, and another user asked of
 * a podctl that is not root.
 */
export const appUserProblems = (m: PodManifest): ManifestProblem[] => {
  const problems: ManifestProblem[] = []
  m.apps.forEach((a, i) => {
    // An image app's user is the image's, looked up in its /etc/passwd when it starts;
    // without root, the pod maps one id, its root, so a user named is one it cannot have.
    if (a.image !== undefined) {
      const isRoot = (v: string | undefined): boolean => v === undefined || v === '0' || v === 'root'
      if ((process.geteuid?.() ?? 0) !== 0 && (a.user !== undefined || a.group !== undefined) && !(isRoot(a.user) && isRoot(a.group))) {
        problems.push({ path: `apps[${i}].user`, problem: "a podctl that is not root runs an image's apps as the pod's root: its pod maps one id, no user to run them as" })
      }
      return
    }
    let u: AppUser | undefined
    try {
      u = resolveAppUser(a)
    } catch (er) {
      problems.push({ path: `apps[${i}].${a.user !== undefined && (er as Error).message.includes('user') ? 'user' : 'group'}`, problem: (er as Error).message })
      return
    }
    if (u !== undefined && !maySwitchTo(u)) {
      problems.push({ path: `apps[${i}].user`, problem: `only root can run an app as another user or group (uid ${u.uid}, gid ${u.gid})` })
    }
  })
  return problems
}
