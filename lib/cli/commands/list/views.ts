/**
 * What list does with pods once it has their views, from this data dir or
 * from the fleet (lib/cli/actions/fleet.ts): --state and --filter, the
 * sort orders, and the table, JSON or UUIDs it prints.
 */
import { PodctlError, shortId } from '../../../errors.js'
import { formatNetworks } from '../../../network/attach.js'
import { POD_STATES, parseState, type PodState } from '../../../pod/state.js'
import type { PodView } from '../../../pod/view.js'
import { formatTable, isJson, relativeTime, styleState, toJson, wantsHeader } from '../../output.js'
import type { ListOptions } from './options.js'

// created_at is RFC 3339 UTC with a fixed width, so plain string order is
// time order (and much cheaper than localeCompare over 10,000 pods).
const byCreation = (a: { created_at: string | null; uuid: string }, b: { created_at: string | null; uuid: string }): number => {
  const x = a.created_at ?? ''
  const y = b.created_at ?? ''
  if (x !== y) return x < y ? -1 : 1
  return a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0
}

const FILTER_KEYS = ['state', 'name', 'app'] as const
export type FilterKey = (typeof FILTER_KEYS)[number]

const stateOf = (s: string): PodState => {
  const st = parseState(s)
  if (!st) throw new PodctlError('EUSAGE', `unknown state ${JSON.stringify(s)}`, `states: ${POD_STATES.join(', ')}`)
  return st
}

/**
 * --state and --filter as one set of wanted values per key: a pod must
 * match every key given, and any one value of a key (podman's rule).
 */
export const parseFilters = (opts: ListOptions): Map<FilterKey, Set<string>> => {
  const wanted = new Map<FilterKey, Set<string>>()
  const add = (key: FilterKey, value: string): void => {
    wanted.set(key, (wanted.get(key) ?? new Set()).add(key === 'state' ? stateOf(value) : value))
  }
  for (const s of opts.state ?? []) add('state', s)
  for (const f of (opts.filter ?? []).flatMap((x) => x.split(','))) {
    const eq = f.indexOf('=')
    const key = f.slice(0, eq) as FilterKey
    if (eq < 1 || !FILTER_KEYS.includes(key)) {
      throw new PodctlError('EUSAGE', `invalid --filter ${JSON.stringify(f)}: expected KEY=VALUE with KEY one of ${FILTER_KEYS.join(', ')}`, 'e.g. --filter state=running --filter app=web')
    }
    add(key, f.slice(eq + 1))
  }
  return wanted
}

/** A pod as list shows it: from this data dir, or from the fleet (with its node). */
export type ListedView = Omit<PodView, 'state'> & { state: string; node?: string }

export const matches = (v: ListedView, wanted: Map<FilterKey, Set<string>>): boolean =>
  (!wanted.has('state') || wanted.get('state')!.has(v.state)) &&
  (!wanted.has('name') || wanted.get('name')!.has(v.name ?? '')) &&
  (!wanted.has('app') || v.apps.some((a) => wanted.get('app')!.has(a.name)))

const byName = (a: ListedView, b: ListedView): number => (a.name === b.name ? byCreation(a, b) : a.name === null ? 1 : b.name === null ? -1 : a.name < b.name ? -1 : 1)
// A fleet's `unknown` (a lost node's pods) sorts last.
const stateRank = (s: string): number => (POD_STATES as readonly string[]).indexOf(s) >>> 0
const byState = (a: ListedView, b: ListedView): number => stateRank(a.state) - stateRank(b.state) || byCreation(a, b)
const SORTS = { created: byCreation, name: byName, state: byState }

/** --quiet prints full UUIDs, one a line, and nothing else: no format but the table's. */
export const checkQuiet = (opts: ListOptions): void => {
  if (opts.quiet && opts.format !== 'table') throw new PodctlError('EUSAGE', `--quiet prints UUIDs only: it cannot be used with --format ${opts.format}`)
}

/** The fleet's pods (`list --cluster`), filtered, sorted and printed as list prints a data dir's, with a NODE column. */
export const fleetListOutput = (views: ListedView[], opts: ListOptions, colour = false): string => {
  checkQuiet(opts)
  const filters = parseFilters(opts)
  return viewsOutput(
    views.filter((v) => matches(v, filters)),
    opts,
    colour,
    true,
  )
}

/** What list prints of these pods; a NODE column when they come from the fleet. */
export const viewsOutput = (views: ListedView[], opts: ListOptions, colour: boolean, fleet = false): string => {
  views.sort(SORTS[opts.sort ?? 'created'])
  if (opts.quiet) return views.map((v) => `${v.uuid}\n`).join('')
  if (isJson(opts.format)) return toJson(views, opts.format)
  const now = Date.now()
  const time = (t: string | null): string => (opts.full ? (t ?? '-') : relativeTime(t, now))
  const rows = views.map((v) => [
    opts.full ? v.uuid : shortId(v.uuid),
    ...(fleet ? [v.node ?? '-'] : []),
    v.name ?? '-',
    // CONTRACT §13: an image app as name(image).
    v.apps.map((a) => (a.image !== undefined ? `${a.name}(${a.image_name ?? a.image.slice(0, 'sha256:'.length + 12)})` : a.name)).join(',') || '-',
    v.state,
    time(v.created_at),
    time(v.started_at),
    // CONTRACT §14, rkt's column: bridge:ip4=10.90.0.5 (a fleet's pod from an older node has no "networks").
    Array.isArray(v.networks) && v.networks.length > 0 ? formatNetworks(v.networks) : '-',
  ])
  const header = ['UUID', ...(fleet ? ['NODE'] : []), 'NAME', 'APPS', 'STATE', 'CREATED', 'STARTED', 'NETWORKS']
  const stateCol = header.indexOf('STATE')
  return formatTable(wantsHeader(opts) ? header : undefined, rows, (col, cell) => (col === stateCol ? styleState(cell, colour) : cell))
}
