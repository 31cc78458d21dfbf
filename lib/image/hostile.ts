/**
 * How an import refuses an image (CONTRACT sections 13 and 12a): exit 2,
 * a message naming the image and the entry, nothing of it kept. And the
 * one bound every source is held to while it stages: `--max-size`,
 * counted as bytes written, so that an archive that is small to send and
 * huge to store (a gzip bomb, a sparse file) stops there and not at a full
 * disk.
 */
import { PodctlError, errnoCode, oneLine } from '../errors.js'

/** An image refused for what one of its entries does: exit 2, naming the entry and the image. */
export class HostileImageError extends PodctlError {
  /** `layer` says where the entry is ("layer 2 of 3 (sha256:…)", "docker-archive:x.tar"), or '' when the image's name says it already. */
  constructor(image: string, layer: string, entry: string, why: string, hint?: string) {
    super('EUSAGE', `image ${image} is refused: ${layer === '' ? '' : `${layer}, `}entry ${JSON.stringify(oneLine(entry))}: ${why}`, hint ?? 'nothing of it was kept; podctl does not unpack images that could write outside their file system')
    this.name = 'HostileImageError'
  }
}

export const PAST_MAX_HINT = 'nothing of it was kept; give a larger --max-size if the image is what you expect'
export const NO_SPACE_HINT = 'nothing of it was kept; free some space (podctl image prune, podctl gc) or import it into a data dir with more room'

/** Whether `er` says the disk (or the quota) is full. */
export const isNoSpace = (er: unknown): boolean => errnoCode(er) === 'ENOSPC' || errnoCode(er) === 'EDQUOT'

/**
 * What an import may write while it stages its source (every blob and
 * file it copies into its work dir): `--max-size` bytes. Unpacking is
 * bounded by the same figure on its own (RenderWriter), so an import
 * never takes more than twice `--max-size` of the disk.
 */
export class StageBudget {
  readonly max: number
  #used = 0
  readonly #image: string
  readonly #where: string

  /** `name` names the image in messages (its --name) when it has one; `where` the source. */
  constructor(max: number, name: string | undefined, where: string) {
    this.max = max
    this.#image = name ?? `from ${where}`
    this.#where = name === undefined ? '' : where
  }

  /** Bytes written so far. */
  get used(): number {
    return this.#used
  }

  /** Counts `n` more bytes of `entry`; HostileImageError once the total passes `max`. */
  spend(n: number, entry: string): void {
    this.#used += n
    if (this.#used > this.max) throw this.refuse(entry, `the image stages past --max-size (${this.max} bytes)`, PAST_MAX_HINT)
  }

  /** The error of `entry` of the source. */
  refuse(entry: string, why: string, hint?: string): HostileImageError {
    return new HostileImageError(this.#image, this.#where, entry, why, hint)
  }

  /** A write of `entry` that failed: the full disk as a refusal naming it (exit 2); anything else as it is. */
  failed(er: unknown, entry: string): unknown {
    if (isNoSpace(er)) return this.refuse(entry, `no space left on the device (${errnoCode(er)}) to stage it`, NO_SPACE_HINT)
    return er
  }
}
