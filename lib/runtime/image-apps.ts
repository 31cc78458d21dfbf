/**
 * Apps that run from images (CONTRACT §13), as prepare makes them: each
 * app's `image` resolved in the store to the image's digest, which the pod
 * records, and the image config's Entrypoint, Cmd, Env, WorkingDir and
 * User applied as podman applies them (`exec` replaces Cmd, `entrypoint`
 * replaces Entrypoint, `env` adds or overrides). A pod with such an app
 * is isolated ("isolation": "namespaces" is implied).
 */
import { PodctlError } from '../errors.js'
import { readIndex, withStoreLock } from '../image/index-file.js'
import { lookupImage } from '../image/store.js'
import { readImageConfig } from '../image/view.js'
import { ensureRender } from '../image/render.js'
import type { App, PodManifest } from '../pod/manifest.js'
import { imageUser } from './image-user.js'

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

/** One app with its image's defaults applied; `image` becomes the digest. */
const withImage = (dataDir: string, app: App): { app: App; image: ImageOfApp } => {
  const found = lookupImage(dataDir, app.image!)
  const config = readImageConfig(dataDir, found.record.config).config ?? {}
  // podman: an entrypoint of one empty string (--entrypoint '') clears the image's.
  const entrypoint = app.entrypoint?.length === 1 && app.entrypoint[0] === '' ? [] : (app.entrypoint ?? config.Entrypoint ?? [])
  // podman: --entrypoint drops the image's Cmd too; `exec` replaces it.
  const cmd = app.exec ?? (app.entrypoint === undefined ? config.Cmd ?? [] : [])
  const exec = [...entrypoint, ...cmd]
  if (exec.length === 0) {
    throw new PodctlError('EUSAGE', `image ${app.image} has no Entrypoint or Cmd, and app ${app.name} gives no command`, `give one: podctl run --image ${app.image} -- CMD, or "exec" in the manifest`)
  }
  const env = { ...envOf(config.Env), ...(app.env ?? {}) }
  const user = app.user !== undefined || app.group !== undefined ? {} : userOf(config.User)
  return {
    app: {
      ...app,
      ...user,
      image: found.record.digest,
      exec,
      ...(Object.keys(env).length > 0 ? { env } : {}),
      ...(app.workingDirectory === undefined && config.WorkingDir ? { workingDirectory: config.WorkingDir } : {}),
    },
    image: { digest: found.record.digest, name: found.name ?? null },
  }
}

/**
 * The manifest with its image apps resolved, and each one's image; the
 * manifest as it was when it has none. ENOIMAGE (exit 3) for an image the
 * store does not have.
 */
export const resolveImageApps = async (dataDir: string, m: PodManifest): Promise<{ manifest: PodManifest; images: Map<string, ImageOfApp> }> => {
  const images = new Map<string, ImageOfApp>()
  if (!m.apps.some((a) => a.image !== undefined)) return { manifest: m, images }
  const apps: App[] = []
  for (const a of m.apps) {
    if (a.image === undefined) {
      apps.push(a)
      continue
    }
    const r = withImage(dataDir, a)
    images.set(a.name, r.image)
    apps.push(await withNumericUser(dataDir, r.app, a.image))
  }
  return { manifest: { ...m, isolation: 'namespaces', apps }, images }
}

/**
 * An image app's user and group as numbers, looked up in the image's own
 * /etc/passwd and /etc/group: what the volumes it writes are given to
 * before it starts (CONTRACT §10), and what it runs as. A name the image
 * does not know is exit 2 here rather than a failed start.
 */
const withNumericUser = async (dataDir: string, app: App, named: string): Promise<App> => {
  if (app.user === undefined && app.group === undefined) return app
  const render = await ensureRender(dataDir, app.image!)
  try {
    const u = imageUser(render.rootfs, app.user, app.group)
    return { ...app, user: String(u.uid), group: String(u.gid) }
  } catch (er) {
    throw new PodctlError('EUSAGE', `invalid app ${app.name}: ${(er as Error).message}`, `name a user of the image (podctl run --image ${named} -- cat /etc/passwd), or a number`)
  }
}

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
