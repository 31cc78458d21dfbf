/** The options of `podctl volume create`, `list` and `update`, as their actions get them. */
import type { LegendOptions } from '../../output.js'

export interface CreateOptions {
  reclaim: 'retain' | 'delete' | 'recycle'
  sizeLimit?: string
  accessMode: string
  format: string
}

export interface VolumeListOptions extends LegendOptions {
  format: string
  full?: boolean
}

export interface UpdateOptions {
  fromFile?: string[]
  fromDir?: string
  wait: boolean
  timeout: number
}
