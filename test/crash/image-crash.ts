// Crash consistency of the image store (CONTRACT §13): SIGKILL `podctl
// image import` (from a layout, an OCI archive, a Docker archive, stdin)
// at random moments, sometimes with a second import of the same image
// running, and check after every kill that
//   - every image `image list` shows is whole: its blobs are there and
//     match their digests, its render holds every file of the image;
//   - every render in renders/ is whole (none is ever half-made there);
//   - `image prune` (or `gc`) then leaves nothing but the images listed:
//     no work dir, no blob or render of no image, no lock of dead work.
// And concurrent imports of one image (several processes at once, many
// times) store it once. Seeded and reproducible: CRASH_SEED picks the
// schedule, CRASH_TRIALS the number of kills (default 20).
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { seededRandom, type Test } from '../helpers/common.js'
import { OS_RELEASE, buildBusyboxImage, missingTools, randomBytes, skopeoCopy } from '../helpers/images.js'

const missing = missingTools()
if (missing !== undefined) {
  t.comment(`skipped: ${missing}`)
  process.exit(0)
}

const bin = fileURLToPath(new URL('../../bin/podctl', import.meta.url))
const seed = Number(process.env.CRASH_SEED ?? 20261126)
const trials = Number(process.env.CRASH_TRIALS ?? 20)
const rng = seededRandom(seed)

const EXTRA_MB = 8
const fixtures = t.testdir({})
const built = buildBusyboxImage(fixtures, { extraMB: EXTRA_MB })
const OCI_ARCHIVE = path.join(fixtures, 'oci.tar')
const DOCKER_ARCHIVE = path.join(fixtures, 'docker.tar')
skopeoCopy(`oci:${built.layout}:${built.tag}`, `oci-archive:${OCI_ARCHIVE}`)
skopeoCopy(`oci:${built.layout}:${built.tag}`, `docker-archive:${DOCKER_ARCHIVE}:crash:1`)
const BLOB_SHA = createHash('sha256').update(randomBytes(EXTRA_MB * 1024 * 1024)).digest('hex')

const SOURCES: { args: string[]; stdin?: string }[] = [
  { args: [`oci:${built.layout}:${built.tag}`, '--name', 'crash:oci'] },
  { args: [`oci-archive:${OCI_ARCHIVE}`, '--name', 'crash:archive'] },
  { args: [`docker-archive:${DOCKER_ARCHIVE}`] },
  { args: ['-', '--name', 'crash:stdin'], stdin: OCI_ARCHIVE },
]

const podctl = (dir: string, args: string[]) => spawnSync(process.execPath, [bin, '--dir', dir, ...args], { encoding: 'utf8' })

/** Starts an import; SIGKILLs it after `delayMs` if it still runs. */
const importKilledAfter = (dir: string, src: (typeof SOURCES)[number], delayMs: number): Promise<{ code: number | null; signal: string | null; stdout: string; ms: number }> =>
  new Promise((resolve) => {
    const started = Date.now()
    const child = spawn(process.execPath, [bin, '--dir', dir, 'image', 'import', ...src.args], { stdio: [src.stdin ? 'pipe' : 'ignore', 'pipe', 'ignore'] })
    let stdout = ''
    child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()))
    if (src.stdin) {
      const input = fs.createReadStream(src.stdin)
      input.pipe(child.stdin!)
      child.stdin!.on('error', () => input.destroy())
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), delayMs)
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, ms: Date.now() - started })
    })
  })

const sha256File = (p: string): string => createHash('sha256').update(fs.readFileSync(p)).digest('hex')

/** A render holds every file of the image, whole. */
const renderWhole = (rootfs: string): string | undefined => {
  try {
    if (fs.readFileSync(path.join(rootfs, 'etc/os-release'), 'utf8') !== OS_RELEASE) return 'etc/os-release differs'
    if (fs.statSync(path.join(rootfs, 'bin/busybox')).size === 0) return 'bin/busybox is empty'
    if (sha256File(path.join(rootfs, 'srv/blob')) !== BLOB_SHA) return 'srv/blob is not whole'
    if ((fs.statSync(path.join(rootfs, 'srv')).mode & 0o777) !== 0o755) return 'srv has not got its mode yet'
    return undefined
  } catch (er) {
    return (er as Error).message
  }
}

interface Listed {
  name: string | null
  digest: string
}

/** What must hold at any moment, killed import or not. */
const checkWhole = (t: Test, dir: string, what: string): Listed[] => {
  const r = podctl(dir, ['image', 'list', '--format', 'json'])
  t.equal(r.status, 0, `${what}: image list works`, { stderr: r.stderr })
  const listed = JSON.parse(r.stdout || '[]') as Listed[]
  const images = path.join(dir, 'images')
  if (!fs.existsSync(path.join(images, 'index.json'))) return listed
  const index = JSON.parse(fs.readFileSync(path.join(images, 'index.json'), 'utf8')) as { images: Record<string, { digest: string; config: string; layers: string[] }> }
  for (const [hex, rec] of Object.entries(index.images)) {
    for (const d of [rec.digest, rec.config, ...rec.layers]) {
      const p = path.join(images, 'blobs', 'sha256', d.slice(7))
      if (!fs.existsSync(p)) t.fail(`${what}: image ${hex.slice(0, 12)} lacks blob ${d}`)
      else if (sha256File(p) !== d.slice(7)) t.fail(`${what}: blob ${d} does not match its digest`)
    }
    const problem = renderWhole(path.join(images, 'renders', hex, 'rootfs'))
    if (problem !== undefined) t.fail(`${what}: the render of listed image ${hex.slice(0, 12)}: ${problem}`)
  }
  for (const key of fs.existsSync(path.join(images, 'renders')) ? fs.readdirSync(path.join(images, 'renders')) : []) {
    const problem = renderWhole(path.join(images, 'renders', key, 'rootfs'))
    if (problem !== undefined) t.fail(`${what}: render ${key.slice(0, 12)} in renders/ is half-made: ${problem}`)
  }
  const inspect = listed.map((l) => podctl(dir, ['image', 'inspect', l.digest]).status)
  t.ok(inspect.every((s) => s === 0), `${what}: every listed image inspects`)
  return listed
}

/** After a prune or a gc: nothing but the listed images. */
const checkClean = (t: Test, dir: string, what: string): void => {
  const images = path.join(dir, 'images')
  if (!fs.existsSync(images)) return
  const index = JSON.parse(fs.readFileSync(path.join(images, 'index.json'), 'utf8')) as { images: Record<string, { digest: string; config: string; layers: string[] }> }
  const want = new Set(Object.values(index.images).flatMap((r) => [r.digest, r.config, ...r.layers].map((d) => d.slice(7))))
  t.strictSame(fs.readdirSync(path.join(images, 'tmp')), [], `${what}: no work dir left`)
  t.strictSame(fs.readdirSync(path.join(images, 'blobs', 'sha256')).sort(), [...want].sort(), `${what}: exactly the blobs of the images`)
  t.strictSame(fs.readdirSync(path.join(images, 'renders')).sort(), Object.keys(index.images).sort(), `${what}: exactly their renders`)
  t.strictSame(fs.readdirSync(path.join(dir, 'image-locks')).filter((n) => /^(import|render|pull|trash)-/.test(n)), [], `${what}: no lock of dead work`)
}

t.test('SIGKILL at random moments of an import never shows a half image; prune and gc clean up', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  // How long a whole import takes here, so that kills land all through it.
  // The first import may run on a cold cache or beside a burst of other
  // work; the span is the shortest whole import seen so far, from an empty
  // store with nothing beside it, so a slow start does not leave later
  // kills landing after the end.
  const whole = await importKilledAfter(dir, SOURCES[1]!, 600_000)
  t.equal(whole.code, 0, 'an import left alone succeeds')
  let span = Math.max(200, whole.ms)
  t.comment(`seed ${seed}, ${trials} trials, the first import took ${whole.ms} ms`)
  let killed = 0
  for (let i = 0; i < trials; i++) {
    // Mostly from an empty store, so that the kill lands in real work.
    const emptied = rng() < 0.75
    if (emptied) {
      for (const l of checkWhole(t, dir, `trial ${i} before`)) podctl(dir, ['image', 'rm', '--force', l.digest])
      podctl(dir, ['image', 'prune'])
    }
    const src = SOURCES[Math.floor(rng() * SOURCES.length)]!
    const delay = Math.floor(rng() * span)
    const second = rng() < 0.25 ? importKilledAfter(dir, SOURCES[Math.floor(rng() * SOURCES.length)]!, 600_000) : undefined
    const r = await importKilledAfter(dir, src, delay)
    if (r.signal === 'SIGKILL') killed++
    else t.equal(r.code, 0, `trial ${i}: an import that was not killed succeeded`)
    if (r.signal !== 'SIGKILL' && emptied && second === undefined) span = Math.max(200, Math.min(span, r.ms))
    if (second !== undefined) t.equal((await second).code, 0, `trial ${i}: the concurrent import succeeded`)
    const listed = checkWhole(t, dir, `trial ${i} (${src.args[0]!.split(':')[0]} killed after ${delay} ms)`)
    if (r.signal !== 'SIGKILL') t.ok(listed.length > 0, `trial ${i}: the finished import is listed`)
    if (rng() < 0.3) {
      const cleaner = rng() < 0.5 ? ['image', 'prune'] : ['gc']
      t.equal(podctl(dir, cleaner).status, 0, `trial ${i}: ${cleaner.join(' ')}`)
      checkClean(t, dir, `trial ${i} after ${cleaner.join(' ')}`)
      checkWhole(t, dir, `trial ${i} after ${cleaner.join(' ')}`)
    }
  }
  t.comment(`the shortest whole import took ${span} ms`)
  t.ok(killed > trials / 3, `more than a third of the trials were killed mid-way (${killed} of ${trials})`)
  t.equal(podctl(dir, ['image', 'prune']).status, 0)
  checkClean(t, dir, 'at the end')
})

t.test('concurrent imports of one image store it once', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 5)
  const PROCS = 4
  for (let round = 0; round < ROUNDS; round++) {
    const results = await Promise.all(Array.from({ length: PROCS }, (_, i) => importKilledAfter(dir, SOURCES[i % 2]!, 600_000)))
    t.ok(results.every((r) => r.code === 0), `round ${round}: every import succeeded`)
    t.equal(new Set(results.map((r) => r.stdout)).size, 1, `round ${round}: one digest`)
    const images = path.join(dir, 'images')
    const index = JSON.parse(fs.readFileSync(path.join(images, 'index.json'), 'utf8')) as { images: Record<string, { layers: string[] }>; names: Record<string, string> }
    t.equal(Object.keys(index.images).length, 1, `round ${round}: one image`)
    t.strictSame(Object.keys(index.names).sort(), ['crash:archive', 'crash:oci'], `round ${round}: both names`)
    const rec = Object.values(index.images)[0]!
    t.equal(fs.readdirSync(path.join(images, 'blobs', 'sha256')).length, 2 + rec.layers.length, `round ${round}: each blob once`)
    t.equal(fs.readdirSync(path.join(images, 'renders')).length, 1, `round ${round}: one render`)
    t.strictSame(fs.readdirSync(path.join(images, 'tmp')), [], `round ${round}: no work dir left`)
    checkWhole(t, dir, `round ${round}`)
    for (const n of Object.keys(index.names)) podctl(dir, ['image', 'rm', n])
    t.strictSame(JSON.parse(podctl(dir, ['image', 'list', '--format', 'json']).stdout), [], `round ${round}: removed`)
  }
})
