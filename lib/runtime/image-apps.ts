/**
 * Apps that run from images (CONTRACT §13, §15), as prepare makes them:
 * each app's `image` resolved in the store to the image's digest, which
 * the pod records, and the image config's Entrypoint, Cmd, Env,
 * WorkingDir, User and StopSignal applied as podman applies them:
 *
 * - an Entrypoint of one empty string (a Dockerfile's `ENTRYPOINT [""]`,
 *   podman's `--entrypoint ''`) is no entrypoint;
 * - `entrypoint` replaces the image's Entrypoint and drops its Cmd;
 *   `exec` replaces Cmd, and with an Entrypoint is its arguments, never a
 *   program of its own;
 * - the caller's proxy variables (http_proxy, https_proxy, ftp_proxy,
 *   no_proxy, either case) override the image's Env unless the manifest's
 *   `httpProxy` is false (podman's --http-proxy), and `env` adds to or
 *   overrides both (an isolated app of host programs gets them beneath
 *   its `env` too);
 * - the image's User and StopSignal hold unless the app gives its own.
 *
 * A pod with such an app is isolated ("isolation": "namespaces" is implied).
 */
import { PodctlError } from '../errors.js'
import { readIndex, withStoreLock } from '../image/index-file.js'
import { ensureRender } from '../image/render.js'
import { lookupImage } from '../image/store.js'
import { readImageConfig } from '../image/view.js'
import { isolationOf, type App, type PodManifest } from '../pod/manifest.js'
import { readDb, resolveUser } from './app-users.js'
import { proxyEnvOf } from './generate/env.js'

/** What prepare learnt of an image app: the image's digest, and the name it was given by, if any. */
export interface ImageOfApp {
  digest: string
  name: string | null
}

/** `K=V` lines of an image config's Env, as a map (a line without `=` sets nothing). */
const envOf = (lines: readonly string[] | null | undefined): Record<string, string> => {
  const env = new Map<string, string>()
  for (const l of lines ?? []) {
    const eq = l.indexOf('=')
    if (eq > 0) env.set(l.slice(0, eq), l.slice(eq + 1))
  }
  return Object.fromEntries(env)
}

/** An image config's User ("name", "uid", "name:group", "uid:gid") as the app's user and group. */
const userOf = (spec: string | undefined): Pick<App, 'user' | 'group'> => {
  if (!spec) return {}
  const [user, group] = spec.split(':')
  return { ...(user ? { user } : {}), ...(group ? { group } : {}) }
}

/** The caller's proxy variables, unless the manifest's `httpProxy` (podman's --http-proxy=false) says not to. */
const proxyEnv = (m: PodManifest, caller: NodeJS.ProcessEnv): Record<string, string> => (m.httpProxy === false ? {} : proxyEnvOf(caller))

/** Whether `list` is podman's "none": no words at all, or one empty one. */
const none = (list: readonly string[] | null | undefined): boolean => list == null || list.length === 0 || (list.length === 1 && list[0] === '')

/** One app with its image's defaults applied; `image` becomes the digest. */
const withImage = (dataDir: string, app: App, proxies: Record<string, string>): { app: App; image: ImageOfApp } => {
  const found = lookupImage(dataDir, app.image!)
  const config = readImageConfig(dataDir, found.record.config).config ?? {}
  const entrypoint = app.entrypoint !== undefined ? (none(app.entrypoint) ? [] : app.entrypoint) : none(config.Entrypoint) ? [] : config.Entrypoint!
  // podman: --entrypoint drops the image's Cmd too; `exec` replaces it.
  const cmd = app.exec ?? (app.entrypoint === undefined ? config.Cmd ?? [] : [])
  const exec = [...entrypoint, ...cmd]
  if (exec.length === 0) {
    throw new PodctlError('EUSAGE', `image ${app.image} has no Entrypoint or Cmd, and app ${app.name} gives no command`, `give one: podctl run --image ${app.image} -- CMD, or "exec" in the manifest`)
  }
  const env = { ...envOf(config.Env), ...proxies, ...(app.env ?? {}) }
  const user = app.user !== undefined || app.group !== undefined ? {} : userOf(config.User)
  return {
    app: {
      ...app,
      ...user,
      image: found.record.digest,
      exec,
      ...(Object.keys(env).length > 0 ? { env } : {}),
      ...(app.workingDirectory === undefined && config.WorkingDir ? { workingDirectory: config.WorkingDir } : {}),
      ...(app.stopSignal === undefined && config.StopSignal ? { stopSignal: config.StopSignal } : {}),
    },
    image: { digest: found.record.digest, name: found.name ?? null },
  }
}

/**
 * The manifest with its image apps resolved, and each one's image; the
 * manifest as it was when it has none. `caller` is the environment the
 * proxy variables come from. ENOIMAGE (exit 3) for an image the store
 * does not have; EUSAGE for a user or group its image does not know.
 */
export const resolveImageApps = async (dataDir: string, m: PodManifest, caller: NodeJS.ProcessEnv = process.env): Promise<{ manifest: PodManifest; images: Map<string, ImageOfApp> }> => {
  const images = new Map<string, ImageOfApp>()
  const proxies = isolationOf(m) === 'namespaces' ? proxyEnv(m, caller) : {}
  if (!m.apps.some((a) => a.image !== undefined)) {
    // An isolated app of host programs gets them too, beneath its own env (a pod of host processes inherits podctl's).
    return { manifest: Object.keys(proxies).length === 0 ? m : { ...m, apps: m.apps.map((a) => ({ ...a, env: { ...proxies, ...(a.env ?? {}) } })) }, images }
  }
  const apps: App[] = []
  for (const a of m.apps) {
    if (a.image === undefined) {
      apps.push(Object.keys(proxies).length === 0 ? a : { ...a, env: { ...proxies, ...(a.env ?? {}) } })
      continue
    }
    const r = withImage(dataDir, a, proxies)
    images.set(a.name, r.image)
    apps.push(r.app)
  }
  const manifest: PodManifest = { ...m, isolation: 'namespaces', apps }
  await imageAppOwners(dataDir, manifest, (a) => m.apps.find((x) => x.name === a.name)?.image ?? a.image!)
  return { manifest, images }
}

/**
 * The uid and gid of each image app that names a user or group, looked up
 * in its image's own /etc/passwd and /etc/group: what the volumes it
 * writes are given to before it starts (CONTRACT §10). A name the image
 * does not know is EUSAGE here rather than a failed start.
 */
export const imageAppOwners = async (dataDir: string, m: PodManifest, named: (a: App) => string = (a) => a.image!): Promise<Map<string, { uid: number; gid: number }>> => {
  const out = new Map<string, { uid: number; gid: number }>()
  for (const app of m.apps) {
    if (app.image === undefined || (app.user === undefined && app.group === undefined)) continue
    const render = await ensureRender(dataDir, app.image)
    try {
      const { user } = resolveUser({ user: app.user, group: app.group }, readDb(render.rootfs, 'passwd'), readDb(render.rootfs, 'group'))
      out.set(app.name, { uid: user.uid, gid: user.gid })
    } catch (er) {
      throw new PodctlError('EUSAGE', `invalid app ${app.name}: ${(er as Error).message.replace(' in /etc/', " in the image's /etc/")}`, `name a user of the image (podctl run --image ${named(app)} -- cat /etc/passwd), or a number`)
    }
  }
  return out
}

/** The WorkingDir of the image `digest` (an app's, as prepare recorded it): the one working directory podman makes where it is missing. */
export const imageWorkingDir = (dataDir: string, digest: string): string | undefined =>
  readImageConfig(dataDir, lookupImage(dataDir, digest).record.config).config?.WorkingDir || undefined

/**
 * Whether the images a new pod recorded are all still in the store. Run
 * under the store's lock after the pod is written: an `image rm` that ran
 * between the lookup and the write did not see the pod, and the pod must
 * then give up; one that runs after it sees the pod and refuses.
 */
export const imagesStillThere = (dataDir: string, images: ReadonlyMap<string, ImageOfApp>): string | undefined =>
  withStoreLock(dataDir, () => {
    const idx = readIndex(dataDir)
    for (const i of images.values()) if (idx.images[i.digest.slice('sha256:'.length)] === undefined) return i.name ?? i.digest
    return undefined
  })
