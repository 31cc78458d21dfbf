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
export { Pod, newPod, podFromUUIDString, type TransitionOptions } from './pod/pod.js'
export { normalizeUUIDArg, readUUIDFromFile, writeUUIDToFile } from './pod/uuid.js'
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
  type ManifestRule,
  type ValidateOptions,
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
export { preparePod, createPod, discard, appRoot, type CreateOptions } from './pod/prepare.js'
export type { BeforeDelete } from './pod/pod.js'
export { podView, type PodView, type AppView } from './pod/view.js'
export type { PodRecord, AppRecord, AppState } from './pod/record.js'
export { tryLock, isLocked, lockedSet } from './pod/locks.js'
export { tryLockAt, acquireLockAt, lockHeldAt, type HeldLock, type AcquireOptions } from './lock/lock.js'
export { parseDuration, formatDuration } from './duration.js'
// Volumes (CONTRACT §7; Documentation/devel/volumes.md).
export { createVolume, readVolume, listVolumes, removeVolume } from './storage/local/volumes.js'
export type { PvRecord, CreateVolumeOptions } from './storage/volume-record.js'
export type { ReclaimPolicy } from './storage/classes.js'
export { bindVolume, unbindVolume, type BindOptions } from './volume/plugins/persistent.js'
export { pvView, type PvView } from './storage/local/pv-view.js'
export { pvInspect, type PvInspectView } from './volume/view.js'
export { updateFilesVolume, payloadFromSources } from './volume/update.js'
export { AtomicWriter, type Payload, type FileProjection } from './volume/atomic-writer.js'
export { OperationExecutor, type OperationOptions } from './volume/executor.js'
export { PluginRegistry } from './volume/registry.js'
export { defaultRegistry, builtinPlugins } from './volume/plugins/index.js'
export { setUpPodVolumes, tearDownPodVolumes, checkVolumeSources } from './volume/pod-volumes.js'
export { validatePodManifest, parsePodManifest, podManifestProblems, volumeRules } from './volume/manifest.js'
export { prepareNewPod, startNewPod, type NewPodOptions } from './run/new-pod.js'
// Isolated pods on an OCI runtime (CONTRACT §12; Documentation/devel/isolation.md).
export { tearDownPod, checkIsolatedPod } from './runtime/pod-runtime.js'
export { findRuntime, type RuntimeRef } from './runtime/runtime.js'
export { enterPod, type EnterOptions } from './runtime/enter.js'
export { sampleStats, type AppStats } from './runtime/stats.js'
export type { PodRuntime, AppProcess } from './runtime/types.js'
export { podVolumeViews, withVolumes, type VolumeView } from './volume/view.js'
export type { VolumePlugin, VolumeSpec, Mounter, Unmounter, Metrics, VolumeStateRecord } from './volume/types.js'

// Claims, classes and the controller (CONTRACT §8), on a data dir or a fleet (§11; Documentation/devel/controller.md).
export type { VolumeClass, CreateClassOptions } from './storage/classes.js'
export type { VolumeClaim, CreateClaimOptions } from './storage/claims.js'
export { Conflict, type ClaimStore, type Stored, type ReclaimOutcome } from './storage/store.js'
export { LocalStore } from './storage/local/store.js'
export { FleetStore, openFleet, type FleetRef } from './storage/fleet/store.js'
export { syncClaim, removeClaim, reclaimVolume, ensureClaimsBound, type BinderOptions, type SyncResult } from './storage/binder.js'
export type { EnsureBoundOptions } from './storage/pod-claims.js'
export { IgnoredError, localProvisioner, execProvisioner, type Provisioner, type ProvisioningState, type ProvisionRequest, type ProvisionResult, type VolumeToDelete, type Awaitable } from './storage/provisioner.js'
export type { LeaderElection } from './election/election.js'
export { fileElection, controllerLive, readLease, type Lease } from './election/file.js'
export { FleetElection, fleetLeader } from './election/etcd.js'
export { ProvisionController, type ControllerOptions } from './controller/controller.js'
export { FleetPublisher, type PublisherOptions } from './controller/fleet.js'
export { Cluster, type ClusterOptions } from './cluster/client.js'

// Images (CONTRACT §13): the store, imports, renders and app roots.
export { importImage, type ImportOptions, type ImportResult, type ImportProgress } from './image/import.js'
export { pullImage, type PullOptions } from './image/pull.js'
export { parseSource, type Source } from './image/source.js'
export { listImages, lookupImage, tagImage, removeImage, pruneImages, type ImageRow, type RemoveOutcome, type Removed } from './image/store.js'
export { inspectImage, readImageConfig, type ImageInspect } from './image/view.js'
export { ensureRender, renderKey, DEFAULT_MAX_BYTES, type Render, type EnsureRenderOptions } from './image/render.js'
export { prepareAppRoot, tearDownAppRoot, podMountsTeardown, appRootKind, type AppRoot, type RootKind, type AppRootOptions } from './image/app-root.js'
export { imageUsers, imageRefsOfPod, type PodImageRefs, type ImageUser } from './image/users.js'
export { withStoreLock, type ImageRecord } from './image/index-file.js'
export { HostileImageError, type IdMap } from './image/unpack.js'
export { parseName, formatName, type ImageName } from './image/reference.js'
export type { ImageConfig } from './image/oci.js'
