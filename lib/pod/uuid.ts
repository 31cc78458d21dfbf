/**
 * Pod UUIDs: RFC 4122 version 4 (random), lower case, as
 * `crypto.randomUUID()` returns them. The 122 random bits come from the
 * kernel's CSPRNG (/dev/urandom), the source OpenSSL seeds itself from.
 * Why not crypto.randomUUID(): on Node 20 the first call loads seven
 * crypto modules (Web Crypto's global) or thirty (`node:crypto`), about
 * 1 ms of every `podctl run` and `prepare`; three system calls do the same
 * job. (The uuid package was dropped earlier for the same reason: its
 * index loads some twenty modules.)
 */
import fs from 'node:fs'

/** A fresh random UUID (version 4, variant 10), e.g. "3b241101-e2bb-4255-8caf-4136c566a962". */
export const randomUUIDv4 = (): string => {
  const b = Buffer.alloc(16)
  const fd = fs.openSync('/dev/urandom', 'r')
  try {
    if (fs.readSync(fd, b, 0, 16, null) !== 16) throw new Error('short read from /dev/urandom')
  } finally {
    fs.closeSync(fd)
  }
  b[6] = (b[6]! & 0x0f) | 0x40 // version 4
  b[8] = (b[8]! & 0x3f) | 0x80 // variant 10
  const h = b.toString('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}
