/**
 * What an app needs before it is spawned: its root and working directory
 * (made without following a link planted in them), who it runs as, with
 * the directories above its root passable and its own ones its own, and
 * its environment. A failure is thrown shaped like Node's spawn errors, so
 * that the supervisor records it as "could not start" (126, or 127 for a
 * missing program).
 */
import fs from 'node:fs'
import path from 'node:path'
import { mkdirsInside } from '../fs/inside.js'
import { DIR_MODE, allowTraverse } from '../fs/modes.js'
import { resolveAppUser, type AppUser } from '../pod/app-user.js'
import type { App } from '../pod/manifest.js'
import type { Pod } from '../pod/pod.js'
import { appRoot } from '../pod/prepare.js'
import { lookPath } from '../proc/executable.js'
import { PROXY_VARIABLES } from './generate/env.js'

export interface Launch {
  root: string
  cwd: string
  env: NodeJS.ProcessEnv
  /** Set when the app runs as someone else than podctl. */
  user?: AppUser
}

const cannotStart = (message: string, code = 'EPERM'): NodeJS.ErrnoException => Object.assign(new Error(message), { code })

/**
 * The directories another user must pass through to reach a pod's
 * contents: the data dir, the state dir and the pod's own.
 */
export const pathToPod = (pod: Pod): string[] => {
  const stateDir = path.dirname(pod.path)
  return [pod.dataDir, path.dirname(stateDir), stateDir, pod.path]
}

/** ... and to reach an app's root. */
const pathToRoot = (pod: Pod): string[] => [...pathToPod(pod), path.join(pod.path, 'apps')]

/** Where an app runs, made: its root and working directory, and who it runs as. */
export interface AppPlace {
  root: string
  cwd: string
  user?: AppUser
}

/**
 * Resolves `app`'s user and makes its root and working directory, owned
 * by `owner` (default: the app's user, when it has one, with the
 * directories above made passable; an isolated pod passes its apps' host
 * ids, and nothing above is opened). Throws (spawn-like) when the app
 * cannot start.
 */
export const appPlace = (pod: Pod, app: App, owner?: (user: AppUser | undefined) => { uid: number; gid: number } | undefined): AppPlace => {
  let user: AppUser | undefined
  try {
    user = resolveAppUser(app)
  } catch (er) {
    throw cannotStart((er as Error).message)
  }
  const root = appRoot(pod.path, app.name)
  fs.mkdirSync(root, { recursive: true, mode: DIR_MODE })
  const ids = owner ? owner(user) : user
  if (ids) fs.lchownSync(root, ids.uid, ids.gid)
  // A host process of another user reaches its root through the host's
  // paths; an isolated app's root is bound into its container by the
  // runtime, as root, so nothing above it is opened to others (CONTRACT §12a).
  if (ids && owner === undefined) allowTraverse(pathToRoot(pod))
  // Below the root, the app's own tree: never followed through a link it planted.
  const cwd = app.workingDirectory ? mkdirsInside(root, app.workingDirectory.slice(1) || '.', DIR_MODE, ids) : root
  return { root, cwd, ...(user ? { user } : {}) }
}

/**
 * Prepares `app` of `pod` to be spawned as a host process; throws
 * (spawn-like) when it cannot start. Its environment is podctl's, without
 * the caller's proxy variables when the pod says `"httpProxy": false`.
 */
export const appLaunch = (pod: Pod, app: App, opts: { httpProxy: boolean } = { httpProxy: true }): Launch => {
  const { root, cwd, user } = appPlace(pod, app)
  const inherited = opts.httpProxy ? process.env : Object.fromEntries(Object.entries(process.env).filter(([k]) => !PROXY_VARIABLES.includes(k)))
  const env: NodeJS.ProcessEnv = {
    ...inherited,
    ...(user?.name !== undefined ? { USER: user.name, LOGNAME: user.name, HOME: user.home ?? '/' } : {}),
    ...(app.env ?? {}),
    PODCTL_POD_UUID: pod.uuid,
    PODCTL_APP_NAME: app.name,
    PODCTL_APP_ROOT: root,
  }
  lookPath(app.exec[0]!, cwd, env)
  return { root, cwd, env, ...(user ? { user } : {}) }
}
