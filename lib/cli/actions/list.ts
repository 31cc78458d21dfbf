/** What `podctl list` prints, from its options. */
import { PodctlError } from '../../errors.js'
import { dataDirExists } from '../../pod/layout.js'
import { reapOrphans } from '../../pod/reap.js'
import { parseState, type PodState } from '../../pod/state.js'
import { podView, podViewJsonBytes, type PodView } from '../../pod/view.js'
import { Include, listPods } from '../../pod/walk.js'
import type { ListOptions } from '../commands/list.js'
import { formatTable, isJson, relativeTime, toJson } from '../output.js'

// created_at is RFC 3339 UTC with a fixed width, so plain string order is
// time order (and much cheaper than localeCompare over 10,000 pods).
const byCreation = (a: PodView, b: PodView): number => {
  const x = a.created_at ?? ''
  const y = b.created_at ?? ''
  if (x !== y) return x < y ? -1 : 1
  return a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0
}

const CREATED_AT = Buffer.from('"created_at":"')
const OPEN = Buffer.from('[')
const COMMA = Buffer.from(',')
const CLOSE = Buffer.from(']\n')

/** Lists the pods of `dataDir` as `opts` ask; returns what goes to stdout. */
export const listOutput = (dataDir: string, opts: ListOptions): string | Uint8Array => {
  const wanted = new Set<PodState>()
  for (const s of opts.state ?? []) {
    const st = parseState(s)
    if (!st) {
      throw new PodctlError(
        'EUSAGE',
        `unknown state ${JSON.stringify(s)}`,
        'states: embryo, preparing, aborted prepare, prepared, running, exited, exited deleting, exited garbage, deleting, garbage',
      )
    }
    wanted.add(st)
  }
  const pods = dataDirExists(dataDir) ? listPods(dataDir, Include.all) : []
  if (opts.format === 'json') {
    // The fast form: each pod's stored record, with its state spliced in
    // where that gives the same JSON (lib/pod/view.ts), sorted by a key of
    // creation time and UUID (fixed widths, so a plain sort of strings).
    const pieces: Buffer[][] = []
    const keys: string[] = []
    for (const p of pods) {
      if (wanted.size > 0 && !wanted.has(p.state)) continue
      const json = podViewJsonBytes(p, p.recordBytes())
      const body = json[json.length - 1]! // the piece with created_at
      const at = body.indexOf(CREATED_AT)
      const created = at < 0 ? '' : body.toString('latin1', at + CREATED_AT.length, at + CREATED_AT.length + 24)
      keys.push(`${created.padEnd(24)}${p.uuid}${pieces.length}`)
      pieces.push(json)
      if (json.length === 1 && body.indexOf('"state":"unknown"') >= 0) reapOrphans(p)
    }
    keys.sort()
    const out: Buffer[] = [OPEN]
    keys.forEach((k, i) => {
      if (i > 0) out.push(COMMA)
      out.push(...pieces[Number(k.slice(60))]!)
    })
    out.push(CLOSE)
    return Buffer.concat(out)
  }
  const views: PodView[] = []
  for (const p of pods) {
    if (wanted.size > 0 && !wanted.has(p.state)) continue
    const v = podView(p)
    // An exited pod whose record still shows a running app lost its
    // supervisor: make sure that app did not outlive it.
    if (v.apps.some((a) => a.state === 'unknown')) reapOrphans(p)
    views.push(v)
  }
  views.sort(byCreation)
  if (isJson(opts.format)) return toJson(views, opts.format)
  const now = Date.now()
  const time = (t: string | null): string => (opts.full ? (t ?? '-') : relativeTime(t, now))
  const rows = views.map((v) => [
    opts.full ? v.uuid : v.uuid.slice(0, 8),
    v.name ?? '-',
    v.apps.map((a) => a.name).join(',') || '-',
    v.state,
    time(v.created_at),
    time(v.started_at),
  ])
  return formatTable(opts.legacy ? ['UUID', 'NAME', 'APPS', 'STATE', 'CREATED', 'STARTED'] : undefined, rows)
}
