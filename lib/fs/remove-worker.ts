/**
 * A worker thread of a RemovePool (./remove-pool.ts): removes the trees it
 * is sent, one at a time, and answers each with its id and the error, if
 * any. Removal is the same safe removeTree as in the main thread.
 */
import { parentPort } from 'node:worker_threads'
import { errnoCode, isPodctlError } from '../errors.js'
import { removeTree } from './remove-tree.js'

export interface RemoveRequest {
  id: number
  path: string
}

export interface RemoveAnswer {
  id: number
  /** What went wrong, enough to rebuild the error in the main thread. */
  error?: { message: string; podctl?: { code: string; hint?: string }; errno?: string }
}

parentPort?.on('message', ({ id, path }: RemoveRequest) => {
  const answer: RemoveAnswer = { id }
  try {
    removeTree(path)
  } catch (er) {
    const message = er instanceof Error ? er.message : String(er)
    answer.error = isPodctlError(er)
      ? { message, podctl: { code: er.code, ...(er.hint === undefined ? {} : { hint: er.hint }) } }
      : { message, ...(errnoCode(er) === undefined ? {} : { errno: errnoCode(er)! }) }
  }
  parentPort!.postMessage(answer)
})
