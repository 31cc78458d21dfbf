/**
 * Pod states (CONTRACT §2). A state is derived from where the pod's
 * directory is and whether a live process holds its lock; it is never
 * stored anywhere.
 */
import type { PodDir } from './layout.js'

export type PodState =
  | 'embryo'
  | 'preparing'
  | 'aborted prepare'
  | 'prepared'
  | 'running'
  | 'exited'
  | 'exited deleting'
  | 'exited garbage'
  | 'deleting'
  | 'garbage'

/** Every state, in lifecycle order. */
export const POD_STATES: readonly PodState[] = [
  'embryo',
  'preparing',
  'aborted prepare',
  'prepared',
  'running',
  'exited',
  'exited deleting',
  'exited garbage',
  'deleting',
  'garbage',
]

// [lock held, lock free], as in Documentation/devel/pod-lifecycle.md
const STATES: Record<PodDir, readonly [PodState, PodState]> = {
  embryo: ['embryo', 'embryo'],
  prepare: ['preparing', 'aborted prepare'],
  prepared: ['prepared', 'prepared'],
  run: ['running', 'exited'],
  'exited-garbage': ['exited deleting', 'exited garbage'],
  garbage: ['deleting', 'garbage'],
}

/** Derives a pod's state from its dir and lock. No I/O. */
export const deriveState = (dir: PodDir, locked: boolean): PodState => STATES[dir][locked ? 0 : 1]

/** True for states after the pod ran (rkt's IsAfterRun). */
export const isAfterRunState = (s: PodState): boolean =>
  s === 'exited' || s === 'exited deleting' || s === 'exited garbage'

/** True for states a pod never leaves by itself (rkt's IsFinished). */
export const isFinishedState = (s: PodState): boolean =>
  isAfterRunState(s) || s === 'aborted prepare' || s === 'deleting' || s === 'garbage'

/**
 * Parses a state given on the command line. Accepts the words with a
 * space or a hyphen ("exited garbage", "exited-garbage").
 */
export const parseState = (s: string): PodState | undefined => {
  const norm = s.trim().toLowerCase().replace(/[-_]+/g, ' ')
  return POD_STATES.find((st) => st === norm)
}
