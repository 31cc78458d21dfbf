/**
 * What `image pull REF` asks skopeo to copy, as podman 4 resolves a pull:
 * a REF with a transport (`docker://…`, `oci:…`, any of skopeo's) as it
 * is; a fully qualified name as `docker://NAME`; a short name through its
 * alias in registries.conf, else on each unqualified-search registry in
 * turn (the first that has it wins), else refused, with podman's reason.
 */
import { PodctlError } from '../errors.js'
import { formatName, hasDomain, normalizeName, parseName, type ImageName } from './reference.js'
import type { RegistriesConf } from './registries.js'

/** skopeo's transports (containers-transports(5)). */
const TRANSPORTS = new Set(['containers-storage', 'dir', 'docker', 'docker-archive', 'docker-daemon', 'oci', 'oci-archive', 'ostree', 'sif', 'tarball'])

/** One reference to try: what skopeo copies, and the name the image gets from it (none for a digest). */
export interface PullRef {
  ref: string
  name?: ImageName
}

/** The references to try for `text`, in order (see the module's comment). */
export const pullRefs = (text: string, conf: () => RegistriesConf): PullRef[] => {
  const colon = text.indexOf(':')
  if (colon > 0 && TRANSPORTS.has(text.slice(0, colon))) return [{ ref: text }]
  const at = text.indexOf('@')
  const digest = at < 0 ? undefined : text.slice(at + 1)
  if (digest !== undefined && !/^sha256:[a-f0-9]{64}$/.test(digest)) throw new PodctlError('EUSAGE', `invalid image reference ${JSON.stringify(text)}: after "@" comes a sha256 digest`)
  const named = at < 0 ? text : text.slice(0, at)
  const n = parseName(named, 'image reference')
  const tagged = /:[^/]*$/.test(named)
  const ref = (name: string): PullRef => (digest !== undefined ? { ref: `docker://${name}${tagged ? `:${n.tag}` : ''}@${digest}` } : { ref: `docker://${formatName({ name, tag: n.tag })}`, name: { name, tag: n.tag } })
  if (hasDomain(n.name)) return [ref(normalizeName(n.name))]
  const c = conf()
  const alias = c.aliases.get(n.name)
  if (alias !== undefined) return [ref(normalizeName(alias))]
  if (c.search.length === 0) {
    throw new PodctlError('EUSAGE', `short name "${n.name}" did not resolve to an alias and no unqualified-search registries are defined in ${c.file}`, `give the whole name (${normalizeName(n.name)}${tagged ? `:${n.tag}` : ''}), or set unqualified-search-registries or an alias there (containers-registries.conf(5))`)
  }
  return c.search.map((reg) => ref(normalizeName(`${reg}/${n.name}`)))
}
