/** What `podctl list` prints of a data dir's pods, from its options. */
import { dataDirExists } from '../../../pod/layout.js'
import type { Pod } from '../../../pod/pod.js'
import { readRecordFile } from '../../../pod/record.js'
import { reapOrphans } from '../../../pod/reap.js'
import type { PodState } from '../../../pod/state.js'
import { podView, podViewJsonBytes, type PodView } from '../../../pod/view.js'
import { Include, listPods } from '../../../pod/walk.js'
import type { ListOptions } from './options.js'
import { checkQuiet, matches, parseFilters, viewsOutput } from './views.js'

const CREATED_AT = Buffer.from('"created_at":"')
const OPEN = Buffer.from('[')
const COMMA = Buffer.from(',')
const CLOSE = Buffer.from(']\n')

/** Lists the pods of `dataDir` as `opts` ask, handing what goes to stdout to `write`, piece by piece. */
export const listOutput = (dataDir: string, opts: ListOptions, write: (piece: string | Uint8Array) => void, colour = false): void => {
  checkQuiet(opts)
  const filters = parseFilters(opts)
  const wanted = (filters.get('state') ?? new Set()) as Set<PodState>
  const pods = dataDirExists(dataDir) ? listPods(dataDir, Include.all) : []
  // The fast form needs nothing but the directory's state to filter and the creation time to sort.
  if (opts.format === 'json' && !filters.has('name') && !filters.has('app') && (opts.sort ?? 'created') === 'created') return jsonByCreation(pods, wanted, write)
  const views: PodView[] = []
  for (const p of pods) {
    if (wanted.size > 0 && !wanted.has(p.state)) continue
    const v = podView(p)
    // An exited pod whose record still shows a running app lost its
    // supervisor: make sure that app did not outlive it.
    if (v.apps.some((a) => a.state === 'unknown')) reapOrphans(p)
    if (matches(v, filters)) views.push(v)
  }
  write(viewsOutput(views, opts, colour))
}

/** What the output of the first pods read is kept in, chunk by chunk: a pod's JSON never spans two chunks. */
const ARENA_CHUNK = 1024 * 1024
/**
 * How much of the output is kept while the pods are read: past it, a pod's
 * JSON is read again when it is written, so that list holds no more than
 * this however many pods there are (10,000 pods fit, and are read once).
 */
const ARENA_BYTES = 24 * 1024 * 1024
/** What is handed to stdout at once. */
const WRITE_CHUNK = 64 * 1024

/** A pod's JSON for list: its record with the state spliced in, as pieces. */
const podJson = (p: Pod): Buffer[] => {
  // Read here, not through the pod's cache: nothing of it outlives the caller's use.
  const file = readRecordFile(p.path)
  return podViewJsonBytes(p, 'bytes' in file ? file.bytes : undefined)
}

/**
 * `list --format json` in its fast form: each pod's stored record, with
 * its state spliced in where that gives the same JSON (lib/pod/view.ts),
 * sorted by a key of creation time and UUID (fixed widths, so a plain sort
 * of strings). The JSON of the first pods is copied into large chunks as
 * it is read; past ARENA_BYTES a pod is read again when its turn comes.
 * The output is written in pieces, never held whole.
 */
const jsonByCreation = (pods: Pod[], wanted: ReadonlySet<PodState>, write: (piece: Uint8Array) => void): void => {
  const chunks: Buffer[] = []
  let chunk = Buffer.allocUnsafe(0)
  let used = 0
  let kept = 0
  // Where each pod's JSON is, by the number its key ends with: chunk, offset, length (chunk -1: read it again).
  let where = new Float64Array(3 * Math.max(16, pods.length))
  const listed: Pod[] = []
  const keys: string[] = []
  for (const p of pods) {
    if (wanted.size > 0 && !wanted.has(p.state)) continue
    const json = podJson(p)
    const body = json[json.length - 1]! // the piece with created_at
    const at = body.indexOf(CREATED_AT)
    const created = at < 0 ? '' : body.toString('latin1', at + CREATED_AT.length, at + CREATED_AT.length + 24)
    if (json.length === 1 && body.indexOf('"state":"unknown"') >= 0) reapOrphans(p)
    const n = keys.length
    if (3 * n + 3 > where.length) {
      const grown = new Float64Array(where.length * 2)
      grown.set(where)
      where = grown
    }
    let size = 0
    for (const piece of json) size += piece.length
    if (kept + size <= ARENA_BYTES) {
      if (used + size > chunk.length) {
        chunk = Buffer.allocUnsafe(Math.max(ARENA_CHUNK, size))
        chunks.push(chunk)
        used = 0
      }
      where[3 * n] = chunks.length - 1
      where[3 * n + 1] = used
      where[3 * n + 2] = size
      for (const piece of json) used += piece.copy(chunk, used)
      kept += size
    } else {
      where[3 * n] = -1
    }
    listed.push(p)
    keys.push(`${created.padEnd(24)}${p.uuid}${n}`)
  }
  pods.length = 0
  keys.sort()
  const out = new BatchedWriter(write)
  out.add(OPEN)
  for (let i = 0; i < keys.length; i++) {
    if (i > 0) out.add(COMMA)
    const n = Number(keys[i]!.slice(60))
    const c = where[3 * n]!
    if (c >= 0) out.add(chunks[c]!.subarray(where[3 * n + 1]!, where[3 * n + 1]! + where[3 * n + 2]!))
    // Read again: the pod may have moved on meanwhile; what it is now is what is shown.
    else for (const piece of podJson(listed[n]!)) out.add(piece)
  }
  out.add(CLOSE)
  out.end()
}

/** Gathers small pieces into WRITE_CHUNK-sized writes. */
class BatchedWriter {
  readonly #write: (piece: Uint8Array) => void
  readonly #buf = Buffer.allocUnsafe(WRITE_CHUNK)
  #filled = 0

  constructor(write: (piece: Uint8Array) => void) {
    this.#write = write
  }

  add(b: Uint8Array): void {
    if (this.#filled + b.length > this.#buf.length) this.end()
    if (b.length > this.#buf.length) return this.#write(b)
    this.#buf.set(b, this.#filled)
    this.#filled += b.length
  }

  /** Writes what is gathered (a copy: the buffer is reused). */
  end(): void {
    if (this.#filled === 0) return
    this.#write(Buffer.from(this.#buf.subarray(0, this.#filled)))
    this.#filled = 0
  }
}
