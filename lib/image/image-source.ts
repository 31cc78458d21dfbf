/**
 * Where an image comes from, as containers/image's ImageReference has it
 * (types/types.go, copy/copy.go): a transport parses what a user wrote
 * after its name (`oci:DIR[:TAG]`) into a source, and the source stages
 * the image into an import's work dir. `importImage` knows a source by
 * this interface alone: a new transport is a new file in transports/ and
 * a line in source.ts's list, never a branch in import.ts.
 */
import { PodctlError } from '../errors.js'
import type { StageBudget } from './hostile.js'
import type { WorkKind } from './layout.js'
import type { ImageConfig, ImageManifest, Platform } from './oci.js'
import type { ImageName } from './reference.js'
import type { WorkDir } from './work.js'

/** A transport: `NAME:REST` in skopeo's syntax (containers-transports(5)). */
export interface Transport {
  /** Its name, as skopeo spells it: "oci", "oci-archive", "docker-archive". */
  readonly name: string
  /** The source `REST` names (`text` is the whole SOURCE, for messages); EUSAGE when it names none. */
  parse(rest: string, text: string): ImageSource
}

/** An image to import, ready to be staged. */
export interface ImageSource {
  /** The transport that made it ("oci", "oci-archive", "docker-archive"; "archive" for a plain FILE or stdin, "pull" for skopeo's). */
  readonly transport: string
  /** How messages name it: what the user typed ("oci:./layout:v1"), or "the archive on stdin". */
  readonly where: string
  /** The kind of work dir it stages in (images/tmp/KIND-…); "import" unless it says otherwise. */
  readonly workKind?: WorkKind
  /** Refuses what can be refused before anything is written (stdin that is a terminal). */
  check?(): void
  /** Stages every blob of the image in `ctx.work`, each checked, and says which image it is. */
  stage(ctx: StageContext): Promise<StagedImage>
}

/** What a source stages with. */
export interface StageContext {
  dataDir: string
  work: WorkDir
  /** --max-size, counted as bytes written: every blob a source writes goes through stageBlob with it. */
  budget: StageBudget
  /** The platform to take from a multi-platform image, and whether the user asked for it (--platform). */
  platform: Platform
  explicitPlatform: boolean
  /** Told of each chunk staged (progress); `total` is the source's size when it is known. */
  onBytes(n: number, total?: number): void
}

/** An image whose blobs are all staged in the work dir (`<work>/blobs/<hex>`). */
export interface StagedImage {
  manifestHex: string
  manifest: ImageManifest
  configHex: string
  config: ImageConfig
  /** The names the source gives it (a Docker archive's RepoTags, a whole ref name, a pulled name). */
  names: ImageName[]
}

/**
 * `PATH[:REF]`, the REST of a file transport's `NAME:REST`, split at its
 * first ":" (skopeo's rule: a path with a ":" cannot be written so). EUSAGE
 * for an empty path or an empty REF.
 */
export const pathAndRef = (transport: string, rest: string, text: string): [string, string | undefined] => {
  const i = rest.indexOf(':')
  const [p, ref] = i < 0 ? [rest, undefined] : [rest.slice(0, i), rest.slice(i + 1)]
  if (p === '') throw new PodctlError('EUSAGE', `invalid image source ${JSON.stringify(text)}: no path after ${transport}:`)
  if (ref === '') throw new PodctlError('EUSAGE', `invalid image source ${JSON.stringify(text)}: empty tag after the path`)
  return [p, ref]
}
