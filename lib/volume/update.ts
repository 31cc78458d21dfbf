/** `podctl volume update`: new content for a running pod's files volume, by the AtomicWriter, as one executor operation. */
import fs from 'node:fs'
import path from 'node:path'
import { PodChangedStateError, PodctlError, errnoCode, shortId } from '../errors.js'
import type { Pod } from '../pod/pod.js'
import { AtomicWriter, checkPayloadPaths, type Payload } from './atomic-writer.js'
import { OperationExecutor, type OperationOptions } from './executor.js'
import { failpoint } from './failpoint.js'
import { podVolumeRel } from './layout.js'
import { resolveInside } from '../fs/inside.js'
import { readVolumeState } from './state.js'

/** The pod as updates need it. */
export type UpdatablePod = Pick<Pod, 'dataDir' | 'uuid' | 'path' | 'state' | 'refresh' | 'podManifest'>

export interface PayloadSources {
  /** `REL=PATH` (or `PATH`, for REL = its base name): one file each. */
  fromFile?: string[]
  /** Every regular file below DIR, by its path relative to DIR. */
  fromDir?: string
}

const readSource = (file: string): { data: Buffer; mode: number } => {
  try {
    const st = fs.statSync(file)
    if (!st.isFile()) throw new PodctlError('EUSAGE', `${file} is not a regular file`)
    return { data: fs.readFileSync(file), mode: st.mode & 0o777 }
  } catch (er) {
    if (er instanceof PodctlError) throw er
    throw new PodctlError('EUSAGE', `cannot read ${file}: ${errnoCode(er) === 'ENOENT' ? 'no such file' : (er as Error).message}`, undefined, { cause: er })
  }
}

/** A payload from `--from-file` and `--from-dir` (whose links and special files are refused, not followed), checked as `files` are. */
export const payloadFromSources = (src: PayloadSources): Payload => {
  const payload: Payload = new Map()
  const add = (rel: string, from: string, what: string): void => {
    if (payload.has(rel)) throw new PodctlError('EUSAGE', `${what}: ${JSON.stringify(rel)} is given twice`)
    payload.set(rel, readSource(from))
  }
  if (src.fromDir !== undefined) {
    const root = src.fromDir
    const st = fs.statSync(root, { throwIfNoEntry: false })
    if (!st?.isDirectory()) throw new PodctlError('EUSAGE', `--from-dir ${root}: ${st ? 'not a directory' : 'no such directory'}`)
    const walk = (dir: string, rel: string): void => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
        const r = rel ? `${rel}/${e.name}` : e.name
        const p = path.join(dir, e.name)
        if (e.isDirectory()) walk(p, r)
        else if (e.isFile()) add(r, p, '--from-dir')
        else throw new PodctlError('EUSAGE', `--from-dir ${root}: ${r} is ${e.isSymbolicLink() ? 'a symlink' : 'not a regular file'}; only regular files are copied`, 'copy what it points to into the directory instead')
      }
    }
    walk(root, '')
  }
  for (const spec of src.fromFile ?? []) {
    const eq = spec.indexOf('=')
    const [rel, from] = eq < 0 ? [path.basename(spec), spec] : [spec.slice(0, eq), spec.slice(eq + 1)]
    if (from === '') throw new PodctlError('EUSAGE', `--from-file ${JSON.stringify(spec)}: expected REL=PATH or PATH`)
    add(rel, from, '--from-file')
  }
  checkPayloadPaths(payload.keys(), 'paths are relative, without "..", and no part may start with ".."')
  return payload
}

/** Replaces the content of a running pod's files volume; EBADSTATE when the pod is not running or the volume not mounted. */
export const updateFilesVolume = (pod: UpdatablePod, volume: string, payload: Payload, opts: OperationOptions = { wait: true }): { changed: boolean } => {
  pod.refresh()
  if (pod.state !== 'running') {
    throw new PodctlError('EBADSTATE', `pod ${shortId(pod.uuid)} is ${pod.state}; files volumes are updated only while the pod runs`)
  }
  const v = pod.podManifest().manifest.volumes?.find((x) => x.name === volume)
  if (!v) throw new PodctlError('ENOVOLUME', `pod ${shortId(pod.uuid)} has no volume named ${JSON.stringify(volume)}`, `see podctl status ${shortId(pod.uuid)}`)
  if (v.kind !== 'files') {
    throw new PodctlError('EUSAGE', `volume "${volume}" of pod ${shortId(pod.uuid)} is a${v.kind === 'empty' ? 'n' : ''} ${v.kind} volume; only files volumes are updated with podctl volume update`)
  }
  checkPayloadPaths(payload.keys())
  return new OperationExecutor(pod).run(volume, opts, () => {
    const rec = readVolumeState(pod.path, volume)
    if (rec?.phase !== 'mounted') {
      throw new PodctlError('EBADSTATE', `volume "${volume}" of pod ${shortId(pod.uuid)} is ${rec?.phase ?? 'not set up'}`, `it is set up when the pod runs: podctl status ${shortId(pod.uuid)}`)
    }
    const dir = resolveInside(pod.path, podVolumeRel(volume))
    if (dir === undefined || !fs.lstatSync(dir, { throwIfNoEntry: false })?.isDirectory()) {
      throw new PodctlError('EFAILED', `volume "${volume}" of pod ${shortId(pod.uuid)} is not a directory any more (${path.join(pod.path, podVolumeRel(volume))}); podctl does not follow what replaced it`)
    }
    try {
      const changed = new AtomicWriter(dir).write(payload)
      failpoint('update-written', volume)
      return { changed }
    } catch (er) {
      // The pod dir moved (its supervisor died and gc marked it): say so.
      if (errnoCode(er) === 'ENOENT' && !fs.existsSync(pod.path)) {
        throw new PodChangedStateError(pod.uuid, `pod ${shortId(pod.uuid)} changed state while volume "${volume}" was being updated`)
      }
      throw er
    }
  })
}
