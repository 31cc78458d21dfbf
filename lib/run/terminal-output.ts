/**
 * Foreground output: app output streamed to podctl's own stdout and
 * stderr, each line prefixed with "[app] " when the pod has several apps.
 * Partial lines are held until their end arrives, so lines of two apps
 * never mix.
 */
import type { OutputSink } from './supervisor.js'

/** Where the output goes; called on first output, so a silent pod never creates the streams. */
export interface OutputStreams {
  stdout: () => NodeJS.WritableStream
  stderr: () => NodeJS.WritableStream
}

const PROCESS_STREAMS: OutputStreams = { stdout: () => process.stdout, stderr: () => process.stderr }

export const terminalOutput = (prefix: boolean, streams: OutputStreams = PROCESS_STREAMS): OutputSink => {
  const pending = new Map<string, string>()
  return {
    write(app, stream, chunk) {
      const target = stream === 'stdout' ? streams.stdout() : streams.stderr()
      if (!prefix) {
        target.write(chunk)
        return
      }
      const key = `${app}\0${stream}`
      const text = (pending.get(key) ?? '') + chunk.toString('utf8')
      const lines = text.split('\n')
      pending.set(key, lines.pop()!)
      if (lines.length > 0) target.write(lines.map((l) => `[${app}] ${l}\n`).join(''))
    },
    notice(message) {
      streams.stderr().write(`podctl: ${message}\n`)
    },
    flush() {
      for (const [key, rest] of pending) {
        if (rest === '') continue
        const [app, stream] = key.split('\0')
        ;(stream === 'stdout' ? streams.stdout() : streams.stderr()).write(`[${app}] ${rest}\n`)
      }
      pending.clear()
    },
  }
}
