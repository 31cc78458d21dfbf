/** Volume classes (CONTRACT §8), how volumes are made for claims, and how one is checked; a store keeps them. */
import { PodctlError } from '../errors.js'
import { parseDuration } from '../duration.js'
import { NAME_RE } from '../pod/manifest.js'
import { isoTime } from '../pod/record.js'
import { parseBytes } from '../bytes.js'
import { checkName, isObject, type ObjectKind } from './objects.js'
import { CONTROL_RE, rootParamProblem } from './answer-path.js'
import type { VolumeClaim } from './claims.js'
import { DEFAULT_PROVISIONERS_DIR, execTarget } from './provisioner-programs.js'

export type ReclaimPolicy = 'retain' | 'delete' | 'recycle'
export const RECLAIM_POLICIES: readonly ReclaimPolicy[] = ['retain', 'delete', 'recycle']

export interface VolumeClass {
  version: 1
  name: string
  /** "local", "exec:NAME" or (a data dir's class) "exec:/abs/path". */
  provisioner: string
  parameters: Record<string, string>
  reclaim: ReclaimPolicy
  default: boolean
  created_at: string
}

const PARAM_KEY_RE = /^[A-Za-z][A-Za-z0-9_.-]{0,62}$/

/** What is wrong with a provisioner name, if anything; a fleet's name no program's path, which each node maps a name to. */
export const provisionerProblem = (p: string, fleet = false): string | undefined => {
  if (p === 'local') return undefined
  const target = execTarget(p)
  if (target === undefined) return `unknown provisioner ${JSON.stringify(p)}: use "local" or "exec:NAME" (a program in ${DEFAULT_PROVISIONERS_DIR}/NAME)`
  if ('problem' in target) return target.problem
  if (fleet && 'program' in target) {
    return `a class of a fleet names its provisioner, not a program: --provisioner exec:NAME, with the program installed as ${DEFAULT_PROVISIONERS_DIR}/NAME on each node (or in its --provisioners-dir)`
  }
  return undefined
}

/**
 * What is wrong with a class's parameters or reclaim policy for its
 * provisioner, if anything. A fleet's `local` needs `node`: its volumes are
 * directories of one node's data dir.
 */
const parametersProblem = (provisioner: string, params: Record<string, string>, reclaim: ReclaimPolicy, fleet: boolean): { problem: string; hint?: string } | undefined => {
  for (const [k, v] of Object.entries(params)) {
    if (!PARAM_KEY_RE.test(k)) return { problem: `invalid parameter name ${JSON.stringify(k)}: letters, digits, "_", "." and "-", starting with a letter` }
    if (typeof v !== 'string') return { problem: `parameter ${k} is not a string` }
    if (CONTROL_RE.test(v)) return { problem: `parameter ${k} must be one line without control characters: ${JSON.stringify(v)}` }
  }
  if (fleet && reclaim === 'recycle') return { problem: 'a class of a fleet cannot recycle: its volumes are bound to claims only', hint: 'use --reclaim delete (the default) or retain' }
  const exec = provisioner !== 'local'
  if (exec && reclaim === 'recycle') {
    return { problem: 'an exec class cannot recycle: podctl empties only the volumes it made, and an exec volume is emptied by its provisioner\'s delete', hint: 'use --reclaim delete (the default) or retain' }
  }
  try {
    if (exec && params.timeout !== undefined) parseDuration(params.timeout, 'parameter timeout')
    if (!exec && params.sizeLimit !== undefined) parseBytes(params.sizeLimit, 'parameter sizeLimit')
  } catch (er) {
    return { problem: (er as Error).message }
  }
  if (exec) {
    const root = params.root
    const bad = root === undefined ? undefined : rootParamProblem(root)
    if (bad) return { problem: `invalid parameter root ${JSON.stringify(root)}: ${bad}`, hint: 'give the directory that every answer of the provisioner must be below, e.g. --param root=/srv/volumes' }
    return undefined
  }
  const known = fleet ? ['sizeLimit', 'node'] : ['sizeLimit']
  const unknown = Object.keys(params).filter((k) => !known.includes(k))
  if (unknown.length > 0) {
    const hint = fleet ? 'its parameters are sizeLimit and node, e.g. --param node=web-1' : 'its only parameter is sizeLimit, e.g. --param sizeLimit=10Gi (node is for classes of a fleet, with --cluster)'
    return { problem: `the local provisioner has no parameter ${unknown.map((k) => JSON.stringify(k)).join(', ')}`, hint }
  }
  if (fleet && params.node === undefined) {
    return {
      problem: 'a local class of a fleet needs --param node=NAME: its volumes are directories on one node, usable only by pods of that node',
      hint: 'pin it to a node (--param node=NAME), or use an exec: provisioner that returns paths on shared storage',
    }
  }
  if (fleet && !NAME_RE.test(params.node!)) return { problem: `invalid parameter node ${JSON.stringify(params.node)}: a node name` }
  return undefined
}

/** What is wrong with a class object as stored (a file of the data dir, or a value in a fleet's etcd), if anything. */
const classProblem = (v: unknown, fleet = false): string | undefined => {
  if (!isObject(v)) return 'not a JSON object'
  const c = v as Partial<VolumeClass>
  if (c.version !== 1) return 'unknown version'
  if (typeof c.name !== 'string' || !NAME_RE.test(c.name)) return 'bad name'
  if (typeof c.provisioner !== 'string' || provisionerProblem(c.provisioner, fleet)) return 'bad provisioner'
  if (!isObject(c.parameters)) return 'bad parameters'
  if (!RECLAIM_POLICIES.includes(c.reclaim as ReclaimPolicy)) return 'bad reclaim policy'
  const params = parametersProblem(c.provisioner, c.parameters, c.reclaim!, fleet)
  if (params) return `bad parameters: ${params.problem}`
  if (typeof c.default !== 'boolean') return 'bad default'
  if (typeof c.created_at !== 'string') return 'bad created_at'
  return undefined
}

export const CLASS: ObjectKind<VolumeClass> = {
  what: 'volume class',
  dir: 'classes',
  problem: (v) => classProblem(v),
  missingHint: () => 'see podctl volume class list; make one with podctl volume class create NAME --provisioner local',
}

/** A class of a fleet's etcd: its exec provisioner a name, never a path. */
export const FLEET_CLASS: ObjectKind<VolumeClass> = { ...CLASS, problem: (v) => classProblem(v, true) }

export interface CreateClassOptions {
  provisioner: string
  parameters?: Record<string, string>
  reclaim?: ReclaimPolicy
  isDefault?: boolean
}

/** A new class object from the user's options, every check made (EUSAGE); `fleet`: a class of a fleet (CONTRACT §11). */
export const newClass = (name: string, opts: CreateClassOptions, fleet = false): VolumeClass => {
  checkName('class', name)
  const problem = provisionerProblem(opts.provisioner, fleet)
  if (problem) throw new PodctlError('EUSAGE', problem)
  const parameters = opts.parameters ?? {}
  const reclaim = opts.reclaim ?? 'delete'
  const bad = parametersProblem(opts.provisioner, parameters, reclaim, fleet)
  if (bad) throw new PodctlError('EUSAGE', bad.problem, bad.hint)
  return {
    version: 1,
    name,
    provisioner: opts.provisioner,
    parameters,
    reclaim,
    default: opts.isDefault === true,
    created_at: isoTime(),
  }
}

/** A class that any of `claims` uses cannot go (EBADSTATE, exit 4); `flag` is how the store's commands are named (" --cluster"). */
export const checkClassUnused = (name: string, claims: readonly VolumeClaim[], flag: string): void => {
  const using = claims.flatMap((c) => (c.class === name ? [c.name] : []))
  if (using.length === 0) return
  throw new PodctlError(
    'EBADSTATE',
    `volume class ${name} is used by ${using.length === 1 ? 'claim' : 'claims'} ${using.slice(0, 5).join(', ')}${using.length > 5 ? ', …' : ''}`,
    `remove ${using.length === 1 ? 'that claim' : 'those claims'} first: podctl volume claim rm${flag} ${using.slice(0, 5).join(' ')}`,
  )
}
