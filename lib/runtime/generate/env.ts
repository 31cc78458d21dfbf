/**
 * An isolated app's environment, built in one place (CONTRACT §15): what
 * podman gives every container, then the app's own (its image's Env,
 * the caller's proxy variables and the manifest's `env`, merged when the
 * pod was prepared: lib/runtime/image-apps.ts), then podctl's own, which
 * nothing overrides.
 */
import type { AppFacts, PodFacts } from './facts.js'

/** The PATH of an isolated app that sets none (podman's): the host's is not the pod's. */
export const CONTAINER_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

/** What podman calls itself in `container`; podctl's name in its place, as systemd and others read it. */
const CONTAINER_NAME = 'podctl'

/** The variables of a proxy that podman passes from its caller to a container, in either case. */
export const PROXY_VARIABLES: readonly string[] = ['http_proxy', 'https_proxy', 'ftp_proxy', 'no_proxy'].flatMap((v) => [v, v.toUpperCase()])

/** The proxy variables of `env` (the caller's), as podman passes them unless --http-proxy=false. */
export const proxyEnvOf = (env: NodeJS.ProcessEnv): Record<string, string> =>
  Object.fromEntries(PROXY_VARIABLES.flatMap((k) => (env[k] !== undefined ? [[k, env[k]!]] : [])))

/** `K=V` lines, in the runtime spec's form. */
export const envLines = (env: Readonly<Record<string, string>>): string[] => Object.entries(env).map(([k, v]) => `${k}=${v}`)

/** The app's environment as a map; `appRoot` is PODCTL_APP_ROOT inside its container. */
export const appEnvironment = (pod: PodFacts, app: AppFacts, appRoot: string): Record<string, string> => ({
  PATH: CONTAINER_PATH,
  TERM: 'xterm',
  HOSTNAME: pod.hostname,
  container: CONTAINER_NAME,
  HOME: app.user.home,
  ...app.env,
  PODCTL_POD_UUID: app.podUuid,
  PODCTL_APP_NAME: app.name,
  PODCTL_APP_ROOT: appRoot,
})
