// Import limits hold for every source (CONTRACT section 12a): an image
// that is small to send and huge to store (a gzip bomb, a sparse layer)
// is imported into a data dir on a small tmpfs. Staging counts against
// --max-size as unpacking does, whatever the source: past it, or past the
// disk, the import exits 2 naming the entry and the image, the tmpfs never
// fills, and nothing is kept.
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { finished, launcher, argvFor, podctl, type Result } from '../helpers/cli-util.js'
import { STACK_RE, type Test } from '../helpers/common.js'
import { writeBomb, writeRandomLayout } from '../helpers/images.js'

if (process.getuid?.() !== 0) {
  t.comment('skipped: mounting a small tmpfs needs root')
  process.exit(0)
}

const MiB = 1024 * 1024
const TMPFS_MIB = 64
/** Each bomb's layer, in zeros: more than the tmpfs holds. */
const ZEROS_MIB = TMPFS_MIB + 16

// Not a t.testdir: tap would remove it before the tmpfs in it is unmounted.
const base = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-bomb-'))
const mnt = path.join(base, 'mnt')
fs.mkdirSync(mnt, { mode: 0o750 })
const m = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${TMPFS_MIB}m,mode=0750`, 'tmpfs', mnt], { encoding: 'utf8' })
if (m.status !== 0) {
  fs.rmSync(base, { recursive: true, force: true })
  t.comment(`skipped: cannot mount a tmpfs: ${m.stderr.trim()}`)
  process.exit(0)
}
t.teardown(() => {
  spawnSync('umount', ['-l', mnt])
  fs.rmSync(base, { recursive: true, force: true })
})

const fixtures = path.join(base, 'fixtures')
fs.mkdirSync(fixtures)
const DOCKER_GZ = await writeBomb(fixtures, 'docker-archive', ZEROS_MIB, true)
const OCI_GZ = await writeBomb(fixtures, 'oci-archive', ZEROS_MIB, true)
const DOCKER_SPARSE = await writeBomb(fixtures, 'docker-archive', ZEROS_MIB)
const LAYOUT = await writeBomb(fixtures, 'oci-layout', ZEROS_MIB)
t.ok(fs.statSync(DOCKER_GZ).size < MiB, 'the gzip bomb is small to send')

const used = (): number => {
  const s = fs.statfsSync(mnt)
  return (s.blocks - s.bfree) * s.bsize
}

/** Runs `podctl --dir DATA image import ARGS` (stdin from `stdinFile`), watching how much of the tmpfs it takes at most. */
const importWatched = async (t: Test, data: string, args: string[], stdinFile?: string, command = 'import'): Promise<Result & { peak: number }> => {
  const [cmd, argv] = launcher(argvFor(data, ['image', command, ...args]))
  const input = stdinFile === undefined ? 'ignore' : fs.openSync(stdinFile, 'r')
  const child = spawn(cmd, argv, { stdio: [input, 'pipe', 'pipe'] })
  if (typeof input === 'number') fs.closeSync(input)
  t.teardown(() => void (child.exitCode === null && child.signalCode === null && child.kill('SIGKILL')))
  let peak = used()
  const timer = setInterval(() => (peak = Math.max(peak, used())), 5)
  const r = await finished(child)
  clearInterval(timer)
  return { ...r, peak: Math.max(peak, used()) }
}

/** Nothing of the image is left: no name, no render, no work dir, no blob. */
const nothingKept = (t: Test, data: string): void => {
  const list = podctl(data, ['image', 'list', '--format', 'json'])
  t.strictSame(JSON.parse(list.stdout), [], 'image list shows nothing')
  for (const d of ['renders', 'tmp', 'blobs/sha256']) t.strictSame(fs.readdirSync(path.join(data, 'images', d)), [], `nothing in images/${d}`)
}

const BLOB = 'blobs\\/sha256\\/[0-9a-f]{64}'
const sources: [what: string, args: string[], stdin: string | undefined, image: string, entry: string][] = [
  ['a gzip-compressed Docker archive', [`docker-archive:${DOCKER_GZ}`], undefined, `from docker-archive:${DOCKER_GZ}`, 'layer\\.tar'],
  ['a gzip-compressed Docker archive on stdin', ['-'], DOCKER_GZ, 'from the archive on stdin', 'layer\\.tar'],
  ['a gzip-compressed OCI archive', [`oci-archive:${OCI_GZ}`], undefined, `from oci-archive:${OCI_GZ}`, BLOB],
  ['a Docker archive, not compressed (sparse)', [DOCKER_SPARSE], undefined, `from ${DOCKER_SPARSE}`, 'layer\\.tar'],
  ['an OCI layout whose layer blob is sparse', [`oci:${LAYOUT}`], undefined, `from oci:${LAYOUT}`, BLOB],
]
const re = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')

t.test('past --max-size while staging: exit 2 naming the entry and the image, the disk never fills', async (t) => {
  for (const [what, args, stdin, image, entry] of sources) {
    const data = path.join(mnt, `data-${sources.findIndex((s) => s[0] === what)}`)
    const r = await importWatched(t, data, [...args, '--max-size', '16Mi'], stdin)
    t.equal(r.status, 2, `${what}: exit 2`, { stderr: r.stderr })
    t.match(r.stderr, new RegExp(`^podctl: image ${re(image)} is refused: entry "${entry}": the image stages past --max-size \\(16777216 bytes\\)\\nnothing of it was kept; give a larger --max-size`), `${what}: the message names the image and the entry`)
    t.notMatch(r.stderr, STACK_RE, `${what}: no stack trace`)
    t.equal(r.stdout, '', `${what}: no digest printed`)
    t.ok(r.peak < 24 * MiB, `${what}: at most --max-size and a little more of the tmpfs was ever used (${(r.peak / MiB).toFixed(1)} MiB)`)
    nothingKept(t, data)
    fs.rmSync(data, { recursive: true, force: true })
  }
})

t.test('--name names the image in the refusal, with the source', async (t) => {
  const data = path.join(mnt, 'named')
  const r = await importWatched(t, data, [`docker-archive:${DOCKER_GZ}`, '--name', 'evil', '--max-size', '8Mi'])
  t.equal(r.status, 2)
  t.match(r.stderr, new RegExp(`^podctl: image evil:latest is refused: docker-archive:${re(DOCKER_GZ)}, entry "layer\\.tar": the image stages past --max-size \\(8388608 bytes\\)\\nnothing of it was kept; give a larger --max-size`))
  nothingKept(t, data)
  fs.rmSync(data, { recursive: true, force: true })
})

t.test('past the disk while staging (--max-size larger than the disk): exit 2, ENOSPC named, nothing kept', async (t) => {
  for (const [what, args, stdin, image, entry] of [sources[1]!, sources[4]!]) {
    const data = path.join(mnt, 'full')
    const r = await importWatched(t, data, args, stdin)
    t.equal(r.status, 2, `${what}: exit 2`, { stderr: r.stderr })
    t.match(r.stderr, new RegExp(`^podctl: image ${re(image)} is refused: entry "${entry}": no space left on the device \\(ENOSPC\\) to stage it\\nnothing of it was kept; free some space`), `${what}: the message`)
    t.notMatch(r.stderr, STACK_RE)
    nothingKept(t, data)
    t.ok(used() < MiB, `${what}: the tmpfs is empty again`)
    fs.rmSync(data, { recursive: true, force: true })
  }
})

t.test('pull: skopeo is stopped past --max-size, and its full disk is exit 2 too', async (t) => {
  if (spawnSync('sh', ['-c', 'command -v skopeo']).status !== 0) {
    t.comment('skipped: skopeo is not installed')
    return
  }
  // skopeo copies a blob that says it is compressed as it is: a registry's huge blob, here from a layout.
  const layout = writeRandomLayout(fixtures, ZEROS_MIB)
  t.teardown(() => fs.rmSync(layout, { recursive: true, force: true }))
  const data = path.join(mnt, 'pull')
  const r = await importWatched(t, data, [`oci:${layout}:r`, '--max-size', '16Mi'], undefined, 'pull')
  t.equal(r.status, 2, 'past --max-size: exit 2', { stderr: r.stderr })
  t.match(r.stderr, new RegExp(`podctl: image from oci:${re(layout)}:r is refused: entry "[^"]+": skopeo wrote past --max-size \\(16777216 bytes\\) and was stopped\\nnothing of it was kept`))
  t.ok(r.peak < 48 * MiB, `the tmpfs did not fill (${(r.peak / MiB).toFixed(1)} MiB at most)`)
  nothingKept(t, data)
  const full = await importWatched(t, data, [`oci:${layout}:r`], undefined, 'pull')
  t.equal(full.status, 2, 'past the disk: exit 2', { stderr: full.stderr })
  t.match(full.stderr, new RegExp(`podctl: image from oci:${re(layout)}:r is refused: entry "[^"]+": no space left on the device to stage it \\(skopeo says so above\\)\\nnothing of it was kept; free some space`))
  nothingKept(t, data)
  t.ok(used() < MiB, 'the tmpfs is empty again')
})
