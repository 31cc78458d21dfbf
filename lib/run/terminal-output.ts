/**
 * Foreground output: app output streamed to podctl's own stdout and
 * stderr, each line prefixed with "[app] " when the pod has several apps.
 * A partial line is held until its end arrives, so lines of two apps never
 * mix; a line longer than MAX_HELD_BYTES is written in pieces of that
 * size, each a line of its own, so that holding costs bounded memory and
 * every chunk of output is handled once (a 200 MB line took minutes when
 * the held text was split again at every chunk).
 */
import type { OutputSink } from './supervisor.js'

/** Where the output goes: podctl's stdout and stderr (its Io's out and err). */
export interface OutputWriters {
  stdout: (chunk: Uint8Array | string) => void
  stderr: (chunk: Uint8Array | string) => void
}

/** The longest piece of a line held back for its end. */
export const MAX_HELD_BYTES = 64 * 1024

const NEWLINE = Buffer.from('\n')

/** Where to cut `b` at most `at` bytes in without splitting a UTF-8 character. */
const charBoundary = (b: Buffer, at: number): number => {
  let cut = Math.min(at, b.length)
  // 0b10xxxxxx continues a character: step back to its first byte.
  while (cut > 0 && cut < b.length && (b[cut]! & 0xc0) === 0x80) cut--
  return cut === 0 ? Math.min(at, b.length) : cut
}

/** A line being assembled: its pieces and their length. */
interface Held {
  pieces: Buffer[]
  bytes: number
}

export const terminalOutput = (prefix: boolean, writers: OutputWriters): OutputSink => {
  const held = new Map<string, Held>()
  const tags = new Map<string, Buffer>()
  const tagOf = (app: string): Buffer => {
    let t = tags.get(app)
    if (!t) tags.set(app, (t = Buffer.from(`[${app}] `)))
    return t
  }
  return {
    write(app, stream, chunk) {
      const write = stream === 'stdout' ? writers.stdout : writers.stderr
      if (!prefix) {
        write(chunk)
        return
      }
      const key = `${app}\0${stream}`
      const tag = tagOf(app)
      const h = held.get(key) ?? { pieces: [], bytes: 0 }
      const out: Buffer[] = []
      const line = (end: Buffer): void => {
        out.push(tag, ...h.pieces, end)
        h.pieces = []
        h.bytes = 0
      }
      let start = 0
      for (let nl = chunk.indexOf(10); nl >= 0; nl = chunk.indexOf(10, start)) {
        line(chunk.subarray(start, nl + 1))
        start = nl + 1
      }
      let rest = chunk.subarray(start)
      while (h.bytes + rest.length > MAX_HELD_BYTES) {
        const cut = charBoundary(rest, MAX_HELD_BYTES - h.bytes)
        h.pieces.push(rest.subarray(0, cut))
        line(NEWLINE)
        rest = rest.subarray(cut)
      }
      if (rest.length > 0) {
        // A copy: the pipe reuses its buffers.
        h.pieces.push(Buffer.from(rest))
        h.bytes += rest.length
      }
      held.set(key, h)
      if (out.length > 0) write(Buffer.concat(out))
    },
    notice(message) {
      writers.stderr(`podctl: ${message}\n`)
    },
    flush() {
      for (const [key, h] of held) {
        if (h.bytes === 0) continue
        const [app, stream] = key.split('\0') as [string, string]
        ;(stream === 'stdout' ? writers.stdout : writers.stderr)(Buffer.concat([tagOf(app), ...h.pieces, NEWLINE]))
      }
      held.clear()
    },
  }
}
