/**
 * The streaming tar reader: tar-stream (README's dependency table says why
 * it was chosen), with one addition. tar-stream decodes PAX header values
 * as UTF-8 text, which mangles a binary extended attribute (a file
 * capability, `SCHILY.xattr.security.capability`, is a binary struct).
 * Its extractor hands each PAX header's raw bytes to `_decodeLongHeader`;
 * a subclass reads the `SCHILY.xattr.*` records from those bytes first and
 * hangs them, as Buffers, on the decoded header (`rawXattrs`). Should a
 * later tar-stream rename that method, the hook is not called and values
 * that survived the UTF-8 decoding are used (xattrsOf).
 */
import tarStream, { type Extract, type Header } from 'tar-stream'

const RAW = Symbol('podctl.rawXattrs')
const XATTR = 'SCHILY.xattr.'

/** The `SCHILY.xattr.NAME` records of a PAX header, as raw bytes. Records are `LEN KEY=VALUE\n`, LEN counting the whole record. */
export const rawXattrs = (buf: Buffer): Map<string, Buffer> => {
  const out = new Map<string, Buffer>()
  let off = 0
  while (off < buf.length) {
    const space = buf.indexOf(0x20, off)
    if (space < 0) break
    const len = Number.parseInt(buf.toString('latin1', off, space), 10)
    if (!Number.isSafeInteger(len) || len <= space - off || off + len > buf.length) break
    const record = buf.subarray(space + 1, off + len - 1) // without the trailing newline
    const eq = record.indexOf(0x3d)
    if (eq > 0) {
      const key = record.toString('utf8', 0, eq)
      if (key.startsWith(XATTR) && key.length > XATTR.length) out.set(key.slice(XATTR.length), Buffer.from(record.subarray(eq + 1)))
    }
    off += len
  }
  return out
}

type ExtractCtor = new (opts?: object) => Extract
const Base = Object.getPrototypeOf(tarStream.extract()).constructor as ExtractCtor
const hookable = typeof (Base.prototype as { _decodeLongHeader?: unknown })._decodeLongHeader === 'function'

interface Internals {
  _header: { type: string } | null
  _pax: Record<string | symbol, unknown> | null
}

class XattrExtract extends Base {
  _decodeLongHeader(buf: Buffer): void {
    ;(Base.prototype as unknown as { _decodeLongHeader(this: unknown, b: Buffer): void })._decodeLongHeader.call(this, buf)
    const self = this as unknown as Internals
    if (self._header?.type === 'pax-header' && self._pax !== null) {
      const x = rawXattrs(buf)
      if (x.size > 0) Object.defineProperty(self._pax, RAW, { value: x, enumerable: false })
    }
  }
}

/** A tar extractor (tar-stream's, with raw extended attributes kept). */
export const tarExtract = (): Extract => (hookable ? new XattrExtract() : tarStream.extract())

/** The extended attributes of an entry: raw when the hook saw them, else those whose text decoding lost nothing. */
export const xattrsOf = (h: Header): Map<string, Buffer> => {
  const pax = h.pax as Record<string | symbol, unknown> | null | undefined
  if (pax === null || pax === undefined) return new Map()
  const raw = pax[RAW]
  if (raw instanceof Map) return raw as Map<string, Buffer>
  const out = new Map<string, Buffer>()
  for (const [k, v] of Object.entries(pax)) {
    if (k.startsWith(XATTR) && typeof v === 'string' && !v.includes('\uFFFD')) out.set(k.slice(XATTR.length), Buffer.from(v, 'utf8'))
  }
  return out
}
