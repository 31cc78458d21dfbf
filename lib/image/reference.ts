/**
 * How images are named: digests (`sha256:<64 hex>`, the only algorithm
 * podctl takes, as podman's default) and NAME[:TAG] references in the
 * syntax of the distribution spec, which every tool that builds or moves
 * images uses. Nothing here touches the disk.
 */
import { PodctlError } from '../errors.js'

export const HEX_RE = /^[a-f0-9]{64}$/
const DIGEST_RE = /^sha256:([a-f0-9]{64})$/

/** The hex of a `sha256:` digest, or undefined if `s` is not one. */
export const digestHex = (s: unknown): string | undefined => (typeof s === 'string' ? DIGEST_RE.exec(s)?.[1] : undefined)

/** `sha256:<hex>` */
export const digestOf = (hex: string): string => `sha256:${hex}`

/** The first 12 hex digits: how tables show a digest (podman's image IDs). */
export const shortHex = (hex: string): string => hex.slice(0, 12)

/** The tag a name without one gets. */
export const DEFAULT_TAG = 'latest'

/** A name and its tag, e.g. `docker.io/library/alpine` and `3`. */
export interface ImageName {
  name: string
  tag: string
}

// The distribution spec's grammar: an optional domain (with a port), then
// path components of lower-case letters and digits joined by separators.
const COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*'
const DOMAIN = '(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?/)?'
const NAME_RE = new RegExp(`^${DOMAIN}${COMPONENT}(?:/${COMPONENT})*$`)
const TAG_RE = /^[\w][\w.-]{0,127}$/
const NAME_MAX = 255

const RULE = 'a name is lower-case letters, digits and separators (. _ -) in "/"-separated parts, optionally after a registry host, and a tag is up to 128 letters, digits, "_", "." and "-"'

/** Parses `text` as NAME[:TAG], or undefined when it is not one. */
export const tryParseName = (text: string): ImageName | undefined => {
  const slash = text.lastIndexOf('/')
  const colon = text.lastIndexOf(':')
  const [name, tag] = colon > slash ? [text.slice(0, colon), text.slice(colon + 1)] : [text, DEFAULT_TAG]
  if (name.length > NAME_MAX || !NAME_RE.test(name) || !TAG_RE.test(tag)) return undefined
  return { name, tag }
}

/** Parses `text` as NAME[:TAG] (tag `latest` when absent); EUSAGE naming `what` when it is not one. */
export const parseName = (text: string, what = 'image name'): ImageName => {
  if (text.includes('@')) {
    throw new PodctlError('EUSAGE', `invalid ${what} ${JSON.stringify(text)}: podctl names an image by NAME[:TAG], or by its digest alone`, 'give NAME[:TAG], or sha256:<digest> (12 or more hex digits name one too)')
  }
  const n = tryParseName(text)
  if (n === undefined) throw new PodctlError('EUSAGE', `invalid ${what} ${JSON.stringify(text)}: ${RULE}`, 'for example: alpine, alpine:3.19, registry.example.com:5000/team/app:v2')
  return n
}

/** `name:tag` */
export const formatName = (n: ImageName): string => `${n.name}:${n.tag}`

/** Whether `text` can only be a digest or a digest prefix (12 or more hex digits, `sha256:` optional). */
export const digestPrefixOf = (text: string): string | undefined => {
  const m = /^(?:sha256:)?([a-f0-9]{12,64})$/.exec(text)
  return m?.[1]
}

/**
 * Whether `name` (without its tag) names its registry: its first part has
 * a "." or a ":" or is "localhost", the rule docker and podman read names
 * by. A name without one is a short name.
 */
export const hasDomain = (name: string): boolean => {
  const slash = name.indexOf('/')
  if (slash < 0) return false
  const first = name.slice(0, slash)
  return first.includes('.') || first.includes(':') || first === 'localhost'
}

/**
 * `name` (without its tag) as docker and podman store it: a name without a
 * registry is docker.io's, and docker.io's one-part names are in library/
 * (`busybox` and `docker.io/busybox` are `docker.io/library/busybox`).
 */
export const normalizeName = (name: string): string => {
  const slash = name.indexOf('/')
  let [domain, rest] = hasDomain(name) ? [name.slice(0, slash), name.slice(slash + 1)] : ['docker.io', name]
  if (domain === 'index.docker.io') domain = 'docker.io'
  if (domain === 'docker.io' && !rest.includes('/')) rest = `library/${rest}`
  return `${domain}/${rest}`
}

/** Whether `a` and `b` are one name once both are normalized (`trial/box:1.0` and `docker.io/trial/box:1.0`). */
export const sameName = (a: ImageName, b: ImageName): boolean => a.tag === b.tag && normalizeName(a.name) === normalizeName(b.name)

/** Whether `text` looks like the start of a digest too short to name one (fewer than 12 hex digits). */
export const isShortHex = (text: string): boolean => /^(?:sha256:)?[a-f0-9]{1,11}$/.test(text)
