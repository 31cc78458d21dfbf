/**
 * Which stored image a user means by what they type (`run --image`, an
 * app's "image", `image inspect`, `tag`, `rm`), found as podman 4 finds
 * one in its local storage (libimage's LookupImage), in this order:
 *
 * 1. a whole digest (`sha256:…`, or 64 hex digits): that image alone;
 * 2. the name as it was stored (podctl keeps names as they were given);
 * 3. the names podman would try for it: a short name's alias
 *    (registries.conf), `localhost/NAME`, NAME on each unqualified-search
 *    registry, then NAME as docker.io's (`busybox` is
 *    `docker.io/library/busybox`, `trial/box` is `docker.io/trial/box`);
 * 4. a prefix of 12 or more hex digits of the image's digest (its
 *    manifest's) or of its ID (its config's digest, what `podman images`
 *    shows);
 * 5. for a short name, a stored name that ends in it (`box:1.0` finds
 *    `quay.io/x/box:1.0`). Where podman takes the first it happens upon,
 *    podctl refuses a name that ends several images' names, listing them.
 *
 * A name that is not there says which tags of it are.
 */
import { PodctlError } from '../errors.js'
import type { ImageIndexFile, ImageRecord } from './index-file.js'
import { digestHex, digestPrefixOf, formatName, hasDomain, isShortHex, normalizeName, parseName, shortHex, tryParseName, type ImageName } from './reference.js'
import { readRegistriesConf, type RegistriesConf } from './registries.js'

/** An image found by what a user typed, and whether it was found by a name (which one) or by its digest. */
export interface Found {
  hex: string
  record: ImageRecord
  /** The NAME:TAG it was found by, if it was. */
  name?: string
}

export interface FindOptions {
  /** The registries configuration, read when a name is not stored as it was typed. */
  registries?: () => RegistriesConf
}

/** The names podman tries for `n` in its local storage (step 3 above), without tags, in order. */
export const candidateNames = (n: ImageName, conf: () => RegistriesConf): string[] => {
  const out: string[] = []
  if (hasDomain(n.name)) out.push(n.name)
  else {
    const alias = conf().aliases.get(n.name)
    if (alias !== undefined) out.push(normalizeName(alias))
    for (const reg of ['localhost', ...conf().search]) out.push(normalizeName(`${reg}/${n.name}`))
  }
  out.push(normalizeName(n.name))
  return [...new Set(out)]
}

/** The stored names, parsed, in name order. */
const stored = (idx: ImageIndexFile): [string, ImageName][] =>
  Object.keys(idx.names)
    .sort()
    .flatMap((full): [string, ImageName][] => {
      const n = tryParseName(full)
      return n === undefined ? [] : [[full, n]]
    })

/**
 * The stored name that is `name` with `tag`: the same text, or a short
 * name stored as it was given (`--name busybox:1.36`, a RepoTag of an old
 * `docker save`) that podman would have stored as `name`.
 */
const storedAs = (idx: ImageIndexFile, name: string, tag: string): string | undefined => {
  const exact = formatName({ name, tag })
  if (idx.names[exact] !== undefined) return exact
  return stored(idx).find(([, s]) => s.tag === tag && !hasDomain(s.name) && normalizeName(s.name) === name)?.[0]
}

/** Whether the stored name `s` is the repository `n` names, one of its candidates, or (a short `n`) ends in it. */
const sameRepository = (s: ImageName, n: ImageName, candidates: readonly string[]): boolean =>
  s.name === n.name || candidates.includes(s.name) || candidates.includes(normalizeName(s.name)) || (!hasDomain(n.name) && s.name.endsWith(`/${n.name}`))

const byName = (idx: ImageIndexFile, name: string): Found => ({ hex: idx.names[name]!, record: idx.images[idx.names[name]!]!, name })

const ambiguous = (text: string, what: string, hexes: string[]): PodctlError =>
  new PodctlError('ENOIMAGE', `${text} is ambiguous: it is the start of ${what} of ${hexes.length} images (${hexes.map(shortHex).join(', ')})`, 'give more of it, or a name')

/** The images whose digest or ID (config digest) starts with `prefix`. */
const byPrefix = (idx: ImageIndexFile, text: string, prefix: string): Found | undefined => {
  const hits = Object.entries(idx.images).filter(([h, r]) => h.startsWith(prefix) || digestHex(r.config)!.startsWith(prefix))
  if (hits.length > 1) throw ambiguous(text, 'the digests or IDs', hits.map(([h]) => h))
  const [hit] = hits
  return hit === undefined ? undefined : { hex: hit[0], record: hit[1] }
}

/**
 * The image `text` names (see the module's comment). ENOIMAGE when there
 * is none, or `text` is ambiguous (listing the candidates).
 */
export const findImage = (idx: ImageIndexFile, text: string, opts: FindOptions = {}): Found => {
  let conf: RegistriesConf | undefined
  const registries = (): RegistriesConf => (conf ??= (opts.registries ?? readRegistriesConf)())
  const prefix = digestPrefixOf(text)
  const whole = prefix !== undefined && (prefix.length === 64 || text.startsWith('sha256:'))
  const n = whole ? undefined : tryParseName(text)
  if (n !== undefined) {
    if (idx.names[formatName(n)] !== undefined) return byName(idx, formatName(n))
    for (const c of candidateNames(n, registries)) {
      const s = storedAs(idx, c, n.tag)
      if (s !== undefined) return byName(idx, s)
    }
  }
  const hit = prefix === undefined ? undefined : byPrefix(idx, text, prefix)
  if (hit !== undefined) return hit
  if (n !== undefined && !hasDomain(n.name)) {
    const ends = stored(idx).filter(([, s]) => s.tag === n.tag && s.name.endsWith(`/${n.name}`))
    const images = [...new Set(ends.map(([full]) => idx.names[full]!))]
    if (images.length === 1) return byName(idx, ends[0]![0])
    if (images.length > 1) throw new PodctlError('ENOIMAGE', `${text} is ambiguous: it ends the names of ${images.length} images (${ends.map(([full]) => full).join(', ')})`, 'give the whole name')
  }
  if (n === undefined && prefix === undefined) parseName(text) // says what is wrong with it
  throw notFound(idx, text, n, registries)
}

/** ENOIMAGE for `text`, saying what could be meant: the tags of the same name there are, or that a prefix needs 12 digits. */
const notFound = (idx: ImageIndexFile, text: string, n: ImageName | undefined, registries: () => RegistriesConf): PodctlError => {
  if (isShortHex(text)) {
    return new PodctlError('ENOIMAGE', `no such image: ${text} (a prefix of an image's digest or ID names it only with 12 or more hex digits)`, 'see the images there are, and their digests: podctl image list')
  }
  if (n !== undefined) {
    const candidates = candidateNames(n, registries)
    const tags = stored(idx)
      .filter(([, s]) => sameRepository(s, n, candidates))
      .map(([full]) => full)
    if (tags.length > 0) {
      const example = `${text.replace(/:[^:/]*$/, '')}:${tryParseName(tags[0]!)!.tag}`
      return new PodctlError('ENOIMAGE', `no such image: ${text} (no tag ${n.tag} of it is stored)`, `the tags there are: ${tags.join(', ')}; name one, e.g. ${example}`)
    }
  }
  return new PodctlError('ENOIMAGE', `no such image: ${text}`, 'see the images there are: podctl image list')
}
