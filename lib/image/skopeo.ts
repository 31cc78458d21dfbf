/**
 * skopeo, run for `image pull`: found on PATH, and watched while it
 * copies. skopeo has no bound on what it writes, so podctl looks at what
 * it has written every few milliseconds and kills it past `--max-size`
 * (CONTRACT section 12a: the bound holds for every source), and tells a
 * full disk from other failures by what skopeo says on stderr, which is
 * passed through as it comes.
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { lookPath } from '../proc/executable.js'
import { NO_SPACE_HINT, PAST_MAX_HINT, type StageBudget } from './hostile.js'

/** The skopeo to run; EFAILED naming the package when there is none. */
export const findSkopeo = (env: NodeJS.ProcessEnv = process.env): string => {
  try {
    return lookPath('skopeo', undefined, env)
  } catch {
    throw new PodctlError('EFAILED', 'skopeo is not installed: podctl image pull runs it to fetch images', 'install the skopeo package (apt-get install skopeo, dnf install skopeo), or copy the image with another tool and podctl image import it')
  }
}

/** How often what skopeo has written is measured. */
const WATCH_MS = 20

/** The bytes of the files below `dir`, and the largest of them (the blob being written), by its path below `dir`. */
const written = (dir: string): { bytes: number; largest: string } => {
  let bytes = 0
  let most = -1
  let largest = ''
  const walk = (rel: string): void => {
    let entries: fs.Dirent[]
    try {
      entries = fs.readdirSync(path.join(dir, rel), { withFileTypes: true })
    } catch {
      return // not made yet, or renamed meanwhile
    }
    for (const e of entries) {
      const r = rel === '' ? e.name : `${rel}/${e.name}`
      if (e.isDirectory()) walk(r)
      else if (e.isFile()) {
        const size = fs.lstatSync(path.join(dir, r), { throwIfNoEntry: false })?.size ?? 0
        bytes += size
        if (size > most) [most, largest] = [size, r]
      }
    }
  }
  walk('')
  return { bytes, largest }
}

const NO_SPACE_RE = /(?:write|open|create) (\/[^:\s]*): (?:no space left on device|disk quota exceeded)|(no space left on device|disk quota exceeded)/i

/**
 * Runs `skopeo copy ARGS` that writes below `dest`; its progress (stdout)
 * goes to stderr. Resolves when it succeeded; HostileImageError when it
 * wrote past the budget (it is killed) or ran out of space, EFAILED
 * naming `ref` for any other failure.
 */
export const skopeoCopy = async (skopeo: string, args: string[], ref: string, dest: string, budget: StageBudget): Promise<void> => {
  let tail = ''
  let past: string | undefined
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(skopeo, args, { stdio: ['ignore', 2, 'pipe'] })
    child.stderr?.on('data', (b: Buffer) => {
      process.stderr.write(b)
      tail = (tail + b.toString('utf8')).slice(-4000)
    })
    const watch = setInterval(() => {
      const w = written(dest)
      if (w.bytes <= budget.max || past !== undefined) return
      past = w.largest
      child.kill('SIGKILL')
    }, WATCH_MS)
    child.on('error', (er) => {
      clearInterval(watch)
      reject(er)
    })
    child.on('close', (c) => {
      clearInterval(watch)
      resolve(c)
    })
  })
  if (past !== undefined) throw budget.refuse(past, `skopeo wrote past --max-size (${budget.max} bytes) and was stopped`, PAST_MAX_HINT)
  if (code === 0) return
  const full = NO_SPACE_RE.exec(tail)
  if (full !== null) {
    const file = full[1] !== undefined && full[1].startsWith(`${dest}/`) ? full[1].slice(dest.length + 1) : '(what skopeo copied)'
    throw budget.refuse(file, 'no space left on the device to stage it (skopeo says so above)', NO_SPACE_HINT)
  }
  throw new PodctlError('EFAILED', `skopeo could not copy ${ref} (it exited with ${code})`, 'its message is above; check the reference, the registry and your credentials (skopeo login)')
}
