/**
 * The JSON shape of a pod (CONTRACT §5): the record plus the derived state.
 * Fields are only ever added, never renamed.
 */
import type { Pod } from './pod.js'
import type { AppRecord } from './record.js'
import type { PodState } from './state.js'
import type { VolumeView } from '../volume/view.js'

export interface AppView {
  name: string
  type: string
  state: AppRecord['state']
  pid: number | null
  started_at: string | null
  finished_at: string | null
  exit_code: number | null
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
  exit_code: number | null
  labels: Record<string, string>
  annotations: Record<string, string>
  apps: AppView[]
  /** Only from `status`, and only for a pod with volumes (CONTRACT §5). */
  volumes?: VolumeView[]
}

/** Builds the JSON object for a pod from its one record file. */
export const podView = (pod: Pod): PodView => {
  const r = pod.record()
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
    })),
  }
}
