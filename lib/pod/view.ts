/**
 * The JSON shape of a pod (CONTRACT §5): the record plus the derived state.
 * Fields are only ever added, never renamed.
 */
import type { Pod } from './pod.js'
import type { AppRecord, NetworkAttachment } from './record.js'
import type { PodState } from './state.js'

export interface AppView {
  name: string
  type: string
  state: AppRecord['state']
  pid: number | null
  started_at: string | null
  finished_at: string | null
  exit_code: number | null
  /** CONTRACT §12: "oom-killed" when the kernel killed the app for its memory limit; absent otherwise. */
  reason?: string
  /** Present (true) on an app with no boundary at all. */
  privileged?: boolean
  /** CONTRACT §13, on an app from an image: its digest, the name it was given by, and how its root was made. */
  image?: string
  /** Absent when the app named its image by digest. */
  image_name?: string
  rootfs?: 'overlay' | 'copy'
}

export interface PodView {
  uuid: string
  name: string | null
  state: PodState
  created_at: string | null
  started_at: string | null
  gc_marked_at: string | null
  pid: number | null
  mutable: boolean
  isolation: 'host' | 'namespaces'
  /** host, none, or the (first) network the pod joins. */
  network: string
  /** CONTRACT §14: where the pod is attached, as the runtime recorded it; null before that, for host and none, and once it is not running. */
  networks: NetworkAttachment[] | null
  /** The OCI runtime of an isolated pod; null for host processes. */
  runtime: string | null
  exit_code: number | null
  labels: Record<string, string>
  annotations: Record<string, string>
  apps: AppView[]
  /** Why the pod's record cannot be used (CONTRACT §10); absent on a healthy pod. */
  damaged?: string
  /** Why its supervisor failed, when it did; absent otherwise. */
  failure?: string
}

/** Builds the JSON object for a pod from its one record file. */
export const podView = (pod: Pod): PodView => {
  const r = pod.record()
  const damaged = pod.damaged()
  const state = pod.state
  // An app recorded as running in a pod whose supervisor is gone did not
  // get its end recorded: say so rather than claim it runs.
  const live = state === 'running'
  return {
    uuid: pod.uuid,
    name: r.name,
    state,
    created_at: r.created_at,
    started_at: r.started_at,
    gc_marked_at: r.gc_marked_at,
    pid: r.pid,
    mutable: r.mutable,
    isolation: r.isolation,
    network: r.network,
    // A pod that is not running is attached to nothing: its supervisor, had
    // it died, left its addresses in the record, and gc or the next command
    // that finds it frees them without touching the record.
    networks: live ? (r.networks ?? null) : null,
    runtime: r.runtime,
    exit_code: r.exit_code,
    labels: r.labels,
    annotations: r.annotations,
    apps: r.apps.map((a) => ({
      name: a.name,
      type: a.type,
      state: a.state === 'running' && !live ? 'unknown' : a.state,
      pid: a.pid,
      started_at: a.started_at,
      finished_at: a.finished_at,
      exit_code: a.exit_code,
      ...(a.reason ? { reason: a.reason } : {}),
      ...(a.privileged === true ? { privileged: true } : {}),
      ...(a.image !== undefined ? { image: a.image } : {}),
      ...(a.image_name ? { image_name: a.image_name } : {}),
      ...(a.rootfs ? { rootfs: a.rootfs } : {}),
    })),
    ...(damaged !== undefined ? { damaged } : {}),
    ...(typeof r.failure === 'string' ? { failure: r.failure } : {}),
  }
}

/**
 * The pod's view as compact JSON (UTF-8 bytes, as pieces to concatenate).
 * For a record stored without private fields (every pod that is not
 * running, unless its supervisor died) these are the stored bytes with
 * `"state"` spliced in after `"name"`: no parse, no re-serialization, no
 * strings on the JavaScript heap, which is most of what
 * `list --format json` would cost. Anything else goes through podView.
 * The JSON is the same either way (test/pod/view.ts checks it).
 */
export const podViewJsonBytes = (pod: Pod, stored: Buffer | undefined): Buffer[] =>
  (stored && spliceState(pod, stored)) ?? [Buffer.from(JSON.stringify(podView(pod)))]

const STATE_FIELD = new Map<PodState, Buffer>()
const stateField = (s: PodState): Buffer => {
  let b = STATE_FIELD.get(s)
  if (!b) STATE_FIELD.set(s, (b = Buffer.from(`"state":${JSON.stringify(s)},`)))
  return b
}
const UUID_KEY = '{"uuid":"'
const NAME_KEY = '","name":'
const NAME_END = UUID_KEY.length + 36 + NAME_KEY.length
// The keys podctl writes after "name", in the order it writes them (record.ts).
// A record written before pods had networks lacks "networks": podView gives it null.
const LATER_KEYS = ['created_at', 'started_at', 'gc_marked_at', 'pid', 'mutable', 'isolation', 'network', 'networks', 'runtime', 'exit_code', 'labels', 'annotations', 'apps'].map((k) => `,"${k}":`)

/**
 * Whether the record has every key, in podctl's order, and a list of apps
 * that starts as one of podctl's: a record that lost a field (edited by
 * hand, or damaged) goes through podView, which says so.
 */
const keysInOrder = (s: string): boolean => {
  let at = NAME_END
  for (const key of LATER_KEYS) {
    at = s.indexOf(key, at)
    if (at < 0) return false
    at += key.length
  }
  return s.startsWith('[]', at) || s.startsWith('[{', at)
}

// The bytes as latin1 (one character per byte, so string offsets are byte
// offsets): string searches are cheaper than several Buffer.indexOf calls.
const spliceState = (pod: Pod, b: Buffer): Buffer[] | undefined => {
  const s = b.toString('latin1')
  if (!s.startsWith(UUID_KEY) || !s.startsWith(pod.uuid, UUID_KEY.length) || !s.startsWith(NAME_KEY, NAME_END - NAME_KEY.length)) return undefined
  let end = s.length
  while (end > 0 && s.charCodeAt(end - 1) === 10) end--
  // "apps" is the last field of a record without private fields.
  if (!s.startsWith(']}', end - 2) || !keysInOrder(s)) return undefined
  const state = pod.state
  // An app recorded as running, or networks, in a pod that is not running: podView says "unknown" and null.
  if (state !== 'running' && (s.includes('"state":"running"') || !s.includes('"networks":null'))) return undefined
  // A name is null or a string of [a-z0-9-]: the first comma ends it.
  const comma = s.indexOf(',', NAME_END)
  if (comma < 0) return undefined
  return [b.subarray(0, comma + 1), stateField(state), b.subarray(comma + 1, end)]
}
