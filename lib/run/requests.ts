/**
 * Requests to a running mutable pod's supervisor (`app start`, `app stop`):
 * one small JSON file per request in `<pod>/requests/`, written by atomic
 * rename, read and deleted by the supervisor. App additions and removals
 * need no request: they are manifest changes, which the supervisor
 * watches for.
 */
import fs from 'node:fs'
import path from 'node:path'
import { writeFileAtomic } from '../fs/atomic.js'
import { DIR_MODE } from '../fs/modes.js'
import { readOwnText } from '../fs/read.js'
import { removeTree } from '../fs/remove-tree.js'

/** A request is a line of JSON; anything larger is not one of podctl's. */
const MAX_REQUEST_BYTES = 4096

export const REQUESTS_DIR = 'requests'

export interface AppRequest {
  op: 'start' | 'stop'
  app: string
  /** For stop: ms between SIGTERM and SIGKILL. */
  timeoutMs?: number
}

let requestCount = 0

export const requestsDir = (podPath: string): string => path.join(podPath, REQUESTS_DIR)

/** Files a request for the supervisor. */
export const writeRequest = (podPath: string, req: AppRequest): void => {
  const dir = requestsDir(podPath)
  fs.mkdirSync(dir, { recursive: true, mode: DIR_MODE })
  // Names sort in the order requests were filed: time first, then a
  // per-process counter (two requests in one millisecond from one script),
  // then the pid, which keeps names from two processes apart.
  const name = `${Date.now().toString().padStart(15, '0')}-${(requestCount++).toString().padStart(8, '0')}-${process.pid}.json`
  writeFileAtomic(dir, name, JSON.stringify(req))
}

/**
 * Deletes a request. Whoever can write the pod's directory can put
 * anything here, say a directory: that goes too (never followed), and what
 * cannot go stays; neither may end the supervisor, and with it the pod.
 */
const discard = (p: string): void => {
  try {
    fs.unlinkSync(p)
  } catch {
    try {
      removeTree(p)
    } catch {
      // left for the pod's removal
    }
  }
}

/** Takes (reads and deletes) the pending requests, oldest first. */
export const takeRequests = (podPath: string): AppRequest[] => {
  const dir = requestsDir(podPath)
  let names: string[]
  try {
    names = fs.readdirSync(dir).filter((n) => n.endsWith('.json') && !n.startsWith('.')).sort()
  } catch {
    return []
  }
  const out: AppRequest[] = []
  for (const n of names) {
    const p = path.join(dir, n)
    try {
      const req = JSON.parse(readOwnText(p, MAX_REQUEST_BYTES) ?? '') as AppRequest
      if ((req.op === 'start' || req.op === 'stop') && typeof req.app === 'string') out.push(req)
    } catch {
      // a damaged request is dropped
    }
    discard(p)
  }
  return out
}
