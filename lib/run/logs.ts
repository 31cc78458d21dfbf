/**
 * Reading app logs for `podctl logs`: the whole log or its last N lines,
 * and following it as it grows (and rotates) until the pod is finished.
 */
import fs from 'node:fs'
import type { Pod } from '../pod/pod.js'
import { POLL_INTERVAL_MS, sleep } from '../poll.js'
import { readOwnText } from '../fs/read.js'
import { DEFAULT_LOG_KEEP, DEFAULT_LOG_MAX_BYTES, logFiles, logPath } from './log-writer.js'

/** A log file is rotated at DEFAULT_LOG_MAX_BYTES; one that is much larger is not podctl's. */
const MAX_LOG_READ_BYTES = 4 * DEFAULT_LOG_MAX_BYTES

/** The last `n` lines of `text` (all of it when n is undefined). */
export const tailLines = (text: string, n: number | undefined): string => {
  if (n === undefined) return text
  if (n <= 0) return ''
  const lines = text.split('\n')
  const complete = text.endsWith('\n')
  if (complete) lines.pop()
  return lines.slice(-n).join('\n') + (complete && lines.length > 0 ? '\n' : '')
}

export const prefixLines = (text: string, app: string | undefined): string => {
  if (app === undefined || text === '') return text
  const complete = text.endsWith('\n')
  const lines = text.split('\n')
  if (complete) lines.pop()
  return lines.map((l) => `[${app}] ${l}`).join('\n') + (complete ? '\n' : '')
}

/** An app's whole log, oldest rotation first. */
export const readAppLog = (pod: Pod, app: string): string => logFiles(pod.path, app).map((f) => readOwnText(f, MAX_LOG_READ_BYTES) ?? '').join('')

interface Cursor {
  app: string
  ino: number
  offset: number
  partial: string
}

const statOrUndefined = (p: string): fs.Stats | undefined => fs.statSync(p, { throwIfNoEntry: false })

/** The rotated files of a log (`.1`, `.2`, ...), newest first, with their inodes. */
const rotatedFiles = (log: string): { file: string; ino: number }[] => {
  const out: { file: string; ino: number }[] = []
  for (let i = 1; i <= DEFAULT_LOG_KEEP; i++) {
    const st = statOrUndefined(`${log}.${i}`)
    if (!st) break
    out.push({ file: `${log}.${i}`, ino: st.ino })
  }
  return out
}

/**
 * Follows the logs of `apps` from their current ends, calling `emit` with
 * complete lines, until the pod is no longer running (then drains once
 * more) or the signal aborts.
 */
export const followLogs = async (pod: Pod, apps: string[], emit: (app: string, text: string) => void, signal?: AbortSignal): Promise<void> => {
  const cursors: Cursor[] = apps.map((app) => {
    const st = statOrUndefined(logPath(pod.path, app))
    return { app, ino: st?.ino ?? 0, offset: st?.size ?? 0, partial: '' }
  })
  const drain = (): void => {
    for (const c of cursors) {
      const p = logPath(pod.path, c.app)
      const st = statOrUndefined(p)
      if (!st) continue
      if (st.ino !== c.ino) {
        // Rotated, maybe more than once since the last look: finish the
        // file we were reading (now .1, .2, ...), read every newer
        // rotation whole, then start the current file.
        const rotated = rotatedFiles(p) // newest first
        const at = rotated.findIndex((r) => r.ino === c.ino)
        if (at >= 0) readFrom(c, rotated[at]!.file)
        for (let i = (at >= 0 ? at : rotated.length) - 1; i >= 0; i--) {
          c.offset = 0
          readFrom(c, rotated[i]!.file)
        }
        c.ino = st.ino
        c.offset = 0
      }
      readFrom(c, p)
    }
  }
  const readFrom = (c: Cursor, file: string): void => {
    let fd: number
    try {
      fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW)
    } catch {
      return
    }
    try {
      const size = fs.fstatSync(fd).size
      if (size <= c.offset) return
      const buf = Buffer.alloc(size - c.offset)
      fs.readSync(fd, buf, 0, buf.length, c.offset)
      c.offset = size
      const text = c.partial + buf.toString('utf8')
      const cut = text.lastIndexOf('\n') + 1
      c.partial = text.slice(cut)
      if (cut > 0) emit(c.app, text.slice(0, cut))
    } finally {
      fs.closeSync(fd)
    }
  }
  for (;;) {
    drain()
    if (signal?.aborted) return
    pod.refresh()
    if (pod.state !== 'running') {
      drain()
      for (const c of cursors) if (c.partial !== '') emit(c.app, `${c.partial}\n`)
      return
    }
    await sleep(POLL_INTERVAL_MS)
  }
}
