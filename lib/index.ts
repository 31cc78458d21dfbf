/**
 * podctl as a library: the pod lifecycle core (CONTRACT §6). The CLI is
 * built on exactly this API.
 *
 * @example
 * ```ts
 * import { podFromUUIDString, walkPods, Include } from 'podctl'
 * await walkPods('/var/lib/podctl', Include.all, (pod) => console.log(pod.uuid, pod.state))
 * ```
 */
export { PodctlError, PodChangedStateError, ErrImmutable, IMMUTABLE_MESSAGE, type ErrorCode } from './errors.js'
export {
  Pod,
  newPod,
  podFromUUIDString,
  normalizeUUIDArg,
  readUUIDFromFile,
  writeUUIDToFile,
  type TransitionOptions,
} from './pod/pod.js'
export { walkPods, listPods, Include, type IncludeMask, type WalkOptions, type InvalidEntry } from './pod/walk.js'
export { deriveState, parseState, isAfterRunState, isFinishedState, POD_STATES, type PodState } from './pod/state.js'
export {
  POD_DIRS,
  FORMAT_VERSION,
  resolveDataDir,
  ensureDataDir,
  type PodDir,
} from './pod/layout.js'
export {
  API_VERSION,
  parseManifest,
  validateManifest,
  manifestProblems,
  visitApps,
  appType,
  AppTypeMask,
  type PodManifest,
  type App,
  type AppType,
  type Mount,
  type Volume,
  type ManifestProblem,
} from './pod/manifest.js'
export { waitFinished, waitReady, type WaitOptions } from './pod/wait.js'
export { gc, removePod, type GcOptions, type GcResult, type GcSkip } from './pod/gc.js'
export { preparePod, createPod, appRoot, type CreateOptions } from './pod/prepare.js'
export { podView, type PodView, type AppView } from './pod/view.js'
export type { PodRecord, AppRecord, AppState } from './pod/record.js'
export { tryLock, isLocked, lockedSet, type HeldLock } from './pod/lock.js'
export { parseDuration, formatDuration } from './duration.js'
