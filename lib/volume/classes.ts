/**
 * Volume classes (CONTRACT §8): how volumes are made for claims.
 * `<data>/classes/<name>.json`, changed under `<data>/volume-locks/class.<name>`.
 */
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { parseDuration } from '../duration.js'
import { DEFAULT_WAIT_MS } from '../lock/lock.js'
import { NAME_RE } from '../pod/manifest.js'
import { isoTime } from '../pod/record.js'
import { parseBytes } from '../bytes.js'
import { volumeLocksDir } from './layout.js'
import { withVolumeLock } from './locking.js'
import { mustReadObject, objectNames, readObject, removeObject, writeObject, type ObjectKind } from './objects.js'
import { RECLAIM_POLICIES, type ReclaimPolicy } from './persistent.js'

export interface VolumeClass {
  version: 1
  name: string
  /** "local" or "exec:/abs/path". */
  provisioner: string
  parameters: Record<string, string>
  reclaim: ReclaimPolicy
  default: boolean
  created_at: string
}

const PARAM_KEY_RE = /^[A-Za-z][A-Za-z0-9_.-]{0,62}$/

/** What is wrong with a provisioner name, if anything. */
export const provisionerProblem = (p: string): string | undefined => {
  if (p === 'local') return undefined
  if (p.startsWith('exec:')) {
    const prog = p.slice(5)
    if (!path.isAbsolute(prog) || prog.includes('\0')) return `the program of ${JSON.stringify(p)} must be an absolute path, e.g. exec:/usr/local/libexec/podctl/dir-provisioner.sh`
    return undefined
  }
  return `unknown provisioner ${JSON.stringify(p)}: use "local" or "exec:/abs/path/to/program"`
}

const classProblem = (v: unknown): string | undefined => {
  const c = v as Partial<VolumeClass> | null
  if (c === null || typeof c !== 'object' || Array.isArray(c)) return 'not a JSON object'
  if (c.version !== 1) return 'unknown version'
  if (typeof c.name !== 'string' || !NAME_RE.test(c.name)) return 'bad name'
  if (typeof c.provisioner !== 'string' || provisionerProblem(c.provisioner)) return 'bad provisioner'
  if (c.parameters === null || typeof c.parameters !== 'object' || Object.values(c.parameters).some((x) => typeof x !== 'string')) return 'bad parameters'
  if (!RECLAIM_POLICIES.includes(c.reclaim as ReclaimPolicy)) return 'bad reclaim policy'
  if (typeof c.default !== 'boolean') return 'bad default'
  return undefined
}

export const CLASS: ObjectKind<VolumeClass> = {
  what: 'volume class',
  dir: 'classes',
  problem: classProblem,
  missingHint: () => 'see podctl volume class list; make one with podctl volume class create NAME --provisioner local',
}

const classLock = (dataDir: string, name: string): string => {
  checkClassName(name) // before the name is part of a path
  return path.join(volumeLocksDir(dataDir), `class.${name}`)
}

/** Runs `fn` holding the class's lock. */
export const withClassLock = <T>(dataDir: string, name: string, fn: () => T): T =>
  withVolumeLock(classLock(dataDir, name), `volume class ${name}`, { wait: true, timeoutMs: DEFAULT_WAIT_MS }, fn)

export const checkClassName = (name: string): void => {
  if (!NAME_RE.test(name)) {
    throw new PodctlError('EUSAGE', `invalid class name ${JSON.stringify(name)}: 1 to 63 characters of a-z, 0-9 and "-", starting with a letter or digit`)
  }
}

export interface CreateClassOptions {
  provisioner: string
  parameters?: Record<string, string>
  reclaim?: ReclaimPolicy
  isDefault?: boolean
}

/**
 * The parameters a provisioner understands, checked before anything is
 * written. In a fleet (`fleet`), `local` also takes `node`, and needs it:
 * its volumes are directories of one node's data dir.
 */
const checkParameters = (provisioner: string, params: Record<string, string>, fleet: boolean): void => {
  for (const [k, v] of Object.entries(params)) {
    if (!PARAM_KEY_RE.test(k)) throw new PodctlError('EUSAGE', `invalid parameter name ${JSON.stringify(k)}: letters, digits, "_", "." and "-", starting with a letter`)
    if (v.includes('\0')) throw new PodctlError('EUSAGE', `parameter ${k} must not contain a NUL character`)
  }
  if (params.timeout !== undefined && provisioner !== 'local') parseDuration(params.timeout, 'parameter timeout')
  if (params.sizeLimit !== undefined && provisioner === 'local') parseBytes(params.sizeLimit, 'parameter sizeLimit')
  if (provisioner !== 'local') return
  const known = fleet ? ['sizeLimit', 'node'] : ['sizeLimit']
  const unknown = Object.keys(params).filter((k) => !known.includes(k))
  if (unknown.length > 0) {
    const hint = fleet ? 'its parameters are sizeLimit and node, e.g. --param node=web-1' : 'its only parameter is sizeLimit, e.g. --param sizeLimit=10Gi (node is for classes of a fleet, with --cluster)'
    throw new PodctlError('EUSAGE', `the local provisioner has no parameter ${unknown.map((k) => JSON.stringify(k)).join(', ')}`, hint)
  }
  if (fleet && params.node === undefined) {
    throw new PodctlError(
      'EUSAGE',
      'a local class of a fleet needs --param node=NAME: its volumes are directories on one node, usable only by pods of that node',
      'pin it to a node (--param node=NAME), or use an exec: provisioner that returns paths on shared storage',
    )
  }
  if (fleet && !NAME_RE.test(params.node!)) throw new PodctlError('EUSAGE', `invalid parameter node ${JSON.stringify(params.node)}: a node name`)
}

/**
 * A new class object from the user's options, every check made (EUSAGE);
 * `fleet`: a class of a fleet's store (CONTRACT §11), which has no
 * recycle policy and pins local volumes to a node.
 */
export const newClass = (name: string, opts: CreateClassOptions, fleet = false): VolumeClass => {
  checkClassName(name)
  const problem = provisionerProblem(opts.provisioner)
  if (problem) throw new PodctlError('EUSAGE', problem)
  const parameters = opts.parameters ?? {}
  checkParameters(opts.provisioner, parameters, fleet)
  if (fleet && opts.reclaim === 'recycle') {
    throw new PodctlError('EUSAGE', 'a class of a fleet cannot recycle: its volumes are bound to claims only', 'use --reclaim delete (the default) or retain')
  }
  return {
    version: 1,
    name,
    provisioner: opts.provisioner,
    parameters,
    reclaim: opts.reclaim ?? 'delete',
    default: opts.isDefault === true,
    created_at: isoTime(),
  }
}

/** Creates a class; EBADSTATE if it exists, EUSAGE for bad input (nothing written). */
export const createClass = (dataDir: string, name: string, opts: CreateClassOptions, validate: (c: VolumeClass) => void = () => {}): VolumeClass => {
  const c = newClass(name, opts)
  validate(c)
  return withClassLock(dataDir, name, () => {
    if (readObject(dataDir, CLASS, name)) throw new PodctlError('EBADSTATE', `volume class ${name} already exists`, `see podctl volume class inspect ${name}`)
    if (c.default) {
      const other = listClasses(dataDir).find((x) => x.default)
      if (other) throw new PodctlError('EBADSTATE', `volume class ${other.name} is already the default`, `remove it first (podctl volume class rm ${other.name}), or create ${name} without --default`)
    }
    writeObject(dataDir, CLASS, name, c)
    return c
  })
}

export const readClass = (dataDir: string, name: string): VolumeClass => mustReadObject(dataDir, CLASS, name)

export const listClasses = (dataDir: string): VolumeClass[] =>
  objectNames(dataDir, CLASS).flatMap((n) => {
    try {
      const c = readObject(dataDir, CLASS, n)
      return c ? [c] : []
    } catch {
      return [] // damaged: inspect names it
    }
  })

/** The class a claim that names none gets: the default, if there is one. */
export const defaultClass = (dataDir: string): VolumeClass | undefined => listClasses(dataDir).find((c) => c.default)

/**
 * Removes a class; EBADSTATE (exit 4) while `usedBy(name)` names claims
 * that use it, ENOVOLUME if there is none.
 */
export const removeClass = (dataDir: string, name: string, usedBy: (cls: string) => string[]): void => {
  checkClassName(name)
  withClassLock(dataDir, name, () => {
    readClass(dataDir, name)
    const claims = usedBy(name)
    if (claims.length > 0) {
      throw new PodctlError(
        'EBADSTATE',
        `volume class ${name} is used by ${claims.length === 1 ? 'claim' : 'claims'} ${claims.slice(0, 5).join(', ')}${claims.length > 5 ? ', …' : ''}`,
        `remove ${claims.length === 1 ? 'that claim' : 'those claims'} first: podctl volume claim rm ${claims.slice(0, 5).join(' ')}`,
      )
    }
    removeObject(dataDir, CLASS, name)
  })
}
