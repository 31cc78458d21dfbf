#!/usr/bin/env node
// The image benchmark (CONTRACT §13, Speed): part of `npm run bench`
// (BENCH_IMAGES=0 skips it), and runnable alone once dist/ is built:
//   node bench/images.js [--reps 3]
//
// 1. Import of a ~100 MB image (gzip layers of host files, the size of a
//    language runtime image) against `tar -xzf` of its layers into an
//    empty directory, measured in the same run, interleaved, each into a
//    fresh directory (target: podctl ≤ 1.5 × tar).
// 2. Peak memory (VmHWM, read from /proc while it runs) of podctl
//    importing and rendering a ~500 MB image (target < 150 MB).
// 3. A render found again: ensureRender of an image rendered already, for
//    a 10 MB and the ~500 MB image (the second pod of an image renders
//    nothing, whatever its size).
// 4. Disk of 100 app roots of one image (overlays, as root) against one
//    render (target ≤ 1.1 × one render plus their uppers).
// 5. The second pod of an image renders nothing: `podctl run --image X --
//    /bin/true` for the 10 MB and the ~500 MB image, both rendered at
//    import, interleaved, medians (target: within 10 % of each other).
//    Both images carry a static busybox (its /bin/true) in a layer of
//    their own; without busybox on this machine, skipped.
// 6. Disk of 100 pods of the ~500 MB image, each run to its end with
//    `run --image X -- /bin/true` (as root: overlays): the render and the
//    pods' directories (uppers, bundles, records, logs) against one
//    render plus their uppers (target ≤ 1.1 ×).
import { spawn, spawnSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import zlib from 'node:zlib'
import { childEnv, median, round, syncFs, timeSpawn } from './lib/measure.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const BIN = path.resolve(here, '..', 'bin', 'podctl')
const MB = 1024 * 1024

const sha = (file) => createHash('sha256').update(fs.readFileSync(file)).digest('hex')

/** Host directories whose files make a realistic layer (many small files, some large), in order of preference. */
const HOST_TREES = ['usr/share/doc', 'usr/share/locale', 'usr/share/man', 'usr/share/perl', 'usr/lib/x86_64-linux-gnu/perl', 'usr/lib/python3', 'usr/share/i18n', 'usr/share/zoneinfo', 'usr/lib/x86_64-linux-gnu', 'usr/lib']

/** Writes layer tars (gzip) from host trees until about `targetMB` of compressed layers; returns their paths. */
const hostLayers = (dir, targetMB, log) => {
  const layers = []
  let total = 0
  for (const tree of HOST_TREES) {
    if (total >= targetMB * MB) break
    if (!fs.existsSync(`/${tree}`)) continue
    const out = path.join(dir, `layer${layers.length}.tar.gz`)
    const r = spawnSync('sh', ['-c', `tar --format=pax -C / -cf - ${tree} 2>/dev/null | gzip -6 > ${out}`])
    if (r.status !== 0) continue
    const size = fs.statSync(out).size
    if (total + size > targetMB * MB * 1.3 && layers.length > 0) {
      fs.rmSync(out)
      continue
    }
    layers.push(out)
    total += size
    log(`images: layer ${tree}: ${round(size / MB, 1)} MB compressed`)
  }
  return layers
}

/** A layer of `mb` MiB of random bytes in 4 MiB files (what compresses least: the worst case for memory). */
const randomLayer = (dir, mb, name) => {
  const tree = path.join(dir, `${name}-tree`)
  fs.mkdirSync(path.join(tree, 'data'), { recursive: true })
  for (let i = 0; i < mb / 4; i++) fs.writeFileSync(path.join(tree, 'data', `f${i}`), randomBytes(4 * MB))
  const out = path.join(dir, `${name}.tar.gz`)
  spawnSync('sh', ['-c', `tar --format=pax -C ${tree} -cf - data | gzip -1 > ${out}`])
  fs.rmSync(tree, { recursive: true, force: true })
  return out
}

/** An OCI layout of the gzip layers given. */
const layout = (dir, layerFiles) => {
  const blobs = path.join(dir, 'blobs', 'sha256')
  fs.mkdirSync(blobs, { recursive: true })
  const put = (file) => {
    const h = sha(file)
    fs.copyFileSync(file, path.join(blobs, h))
    return h
  }
  const diffIds = layerFiles.map((f) => `sha256:${createHash('sha256').update(zlib.gunzipSync(fs.readFileSync(f))).digest('hex')}`)
  const layers = layerFiles.map((f) => ({ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: `sha256:${put(f)}`, size: fs.statSync(f).size }))
  const configBytes = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: diffIds }, config: {} }))
  const cfg = path.join(dir, 'config.json')
  fs.writeFileSync(cfg, configBytes)
  const manifest = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: `sha256:${put(cfg)}`, size: configBytes.length }, layers }))
  const mf = path.join(dir, 'manifest.json')
  fs.writeFileSync(mf, manifest)
  const mh = put(mf)
  fs.writeFileSync(path.join(dir, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}')
  fs.writeFileSync(path.join(dir, 'index.json'), JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: `sha256:${mh}`, size: manifest.length }] }))
  return { dir, digest: `sha256:${mh}`, compressed: layers.reduce((n, l) => n + l.size, 0) }
}

/** Runs podctl to its end, reading its peak memory (VmHWM) from /proc while it runs. */
const peakRss = (args) =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: childEnv })
    let peak = 0
    let stderr = ''
    child.stderr.on('data', (c) => (stderr += c))
    const read = () => {
      try {
        const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8'))
        if (m) peak = Math.max(peak, Number(m[1]) * 1024)
      } catch {
        // exited
      }
    }
    const timer = setInterval(read, 20)
    child.on('error', reject)
    child.on('exit', (code) => {
      clearInterval(timer)
      if (code !== 0) reject(new Error(`podctl ${args.join(' ')} exited ${code}: ${stderr.slice(0, 500)}`))
      else resolve(peak)
    })
  })

const du = (p) => Number(spawnSync('du', ['-sxB1', p], { encoding: 'utf8' }).stdout.split('\t')[0])

/** A layer holding a static busybox as /bin/busybox and /bin/true, so that a pod of the image has a program to run; undefined without busybox here. */
const busyboxLayer = (dir) => {
  const found = spawnSync('sh', ['-c', 'command -v busybox'], { encoding: 'utf8' }).stdout.trim()
  if (!found) return undefined
  const tree = path.join(dir, 'busybox-tree')
  fs.mkdirSync(path.join(tree, 'bin'), { recursive: true })
  fs.copyFileSync(fs.realpathSync(found), path.join(tree, 'bin', 'busybox'))
  fs.chmodSync(path.join(tree, 'bin', 'busybox'), 0o755)
  fs.symlinkSync('busybox', path.join(tree, 'bin', 'true'))
  const out = path.join(dir, 'busybox.tar.gz')
  spawnSync('sh', ['-c', `tar --format=pax -C ${tree} -cf - bin | gzip -6 > ${out}`])
  fs.rmSync(tree, { recursive: true, force: true })
  return out
}

export const measureImages = async ({ reps = 3, log = (s) => process.stderr.write(`bench: ${s}\n`) } = {}) => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-bench-images-'))
  const out = {}
  try {
    // 1. ~100 MB: podctl image import vs tar -xzf of the same layers.
    const hundredLayers = hostLayers(work, 100, log)
    const hundred = layout(path.join(work, 'layout100'), hundredLayers)
    out.import_image_mb = round(hundred.compressed / MB, 1)
    const podctlMs = []
    const tarMs = []
    const fresh = (name) => {
      const d = path.join(work, name)
      fs.rmSync(d, { recursive: true, force: true })
      syncFs()
      return d
    }
    const importOnce = () => {
      const dir = fresh('data')
      const r = timeSpawn(process.execPath, [BIN, '--dir', dir, 'image', 'import', `oci:${hundred.dir}`])
      if (r.status !== 0) throw new Error(`image import exited ${r.status}: ${r.stderr.slice(0, 500)}`)
      return r.ms
    }
    const tarOnce = () => {
      const dir = fresh('tar')
      fs.mkdirSync(dir)
      const r = timeSpawn('sh', ['-c', hundredLayers.map((l) => `tar -xzf ${l} -C ${dir}`).join(' && ')])
      if (r.status !== 0) throw new Error(`tar -x exited ${r.status}: ${r.stderr.slice(0, 500)}`)
      return r.ms
    }
    importOnce()
    tarOnce()
    for (let i = 0; i < reps; i++) {
      if (i % 2 === 0) {
        podctlMs.push(importOnce())
        tarMs.push(tarOnce())
      } else {
        tarMs.push(tarOnce())
        podctlMs.push(importOnce())
      }
    }
    out.import_ms = round(median(podctlMs))
    out.tar_ms = round(median(tarMs))
    out.import_ratio = round(median(podctlMs) / median(tarMs), 2)
    log(`images: import of a ${out.import_image_mb} MB image ${out.import_ms} ms, tar -xzf of its layers ${out.tar_ms} ms: ${out.import_ratio}× (target ≤ 1.5)`)
    fs.rmSync(path.join(work, 'tar'), { recursive: true, force: true })

    // 2. ~500 MB: peak memory of import + render.
    const bin = busyboxLayer(work)
    const big = layout(path.join(work, 'layout500'), [...hundredLayers, randomLayer(work, 400, 'random'), ...(bin ? [bin] : [])])
    const bigDir = fresh('data500')
    out.big_image_mb = round(big.compressed / MB, 1)
    out.peak_rss_mb = round((await peakRss(['--dir', bigDir, 'image', 'import', `oci:${big.dir}`, '--name', 'big'])) / MB, 1)
    out.big_render_mb = round(du(path.join(bigDir, 'images', 'renders')) / MB, 1)
    log(`images: peak memory of podctl importing and rendering a ${out.big_image_mb} MB image (${out.big_render_mb} MB unpacked): ${out.peak_rss_mb} MB (target < 150)`)

    // 3. A render found again costs the same for a small and a large image.
    const { ensureRender } = await import(pathToFileURL(path.resolve(here, '..', 'dist/lib/image/render.js')).href)
    const small = layout(path.join(work, 'layout10'), [randomLayer(work, 8, 'small'), ...(bin ? [bin] : [])])
    out.small_image_mb = round(small.compressed / MB, 1)
    const smallDir = path.join(work, 'data500')
    spawnSync(process.execPath, [BIN, '--dir', smallDir, 'image', 'import', `oci:${small.dir}`, '--name', 'small'], { env: childEnv })
    const lookup = async (digest) => {
      const xs = []
      for (let i = 0; i < 201; i++) {
        const t0 = process.hrtime.bigint()
        await ensureRender(smallDir, digest)
        xs.push(Number(process.hrtime.bigint() - t0) / 1e6)
      }
      return round(median(xs), 3)
    }
    out.render_found_small_ms = await lookup(small.digest)
    out.render_found_big_ms = await lookup(big.digest)
    log(`images: a render found again: ${out.render_found_small_ms} ms for a 10 MB image, ${out.render_found_big_ms} ms for the ${out.big_image_mb} MB one`)

    // 5. run --image X -- /bin/true once X is rendered: the same time for both sizes.
    if (bin === undefined) log('images: run --image: skipped (no busybox here to give the images a /bin/true)')
    else {
      const runOnce = (name) => {
        const r = timeSpawn(process.execPath, [BIN, '--dir', smallDir, 'run', '--image', name, '--', '/bin/true'])
        if (r.status !== 0) throw new Error(`run --image ${name} -- /bin/true exited ${r.status}: ${r.stderr.slice(0, 500)}`)
        return r.ms
      }
      const runReps = Math.max(11, reps * 4 + 1)
      const smallMs = []
      const bigMs = []
      runOnce('small')
      runOnce('big')
      for (let i = 0; i < runReps; i++) {
        const order = i % 2 === 0 ? ['small', 'big'] : ['big', 'small']
        for (const n of order) (n === 'small' ? smallMs : bigMs).push(runOnce(n))
      }
      out.run_reps = runReps
      out.run_small_ms = round(median(smallMs))
      out.run_big_ms = round(median(bigMs))
      out.run_ratio = round(median(bigMs) / median(smallMs), 3)
      log(`images: run --image X -- /bin/true, rendered: ${out.run_small_ms} ms for the ${out.small_image_mb} MB image, ${out.run_big_ms} ms for the ${out.big_image_mb} MB one: ${out.run_ratio}× (target within 10 %; medians of ${runReps}, interleaved)`)
    }

    // 4. 100 app roots of one image: overlays share the render.
    if (process.getuid?.() === 0) {
      const { prepareAppRoot, tearDownAppRoot } = await import(pathToFileURL(path.resolve(here, '..', 'dist/lib/image/app-root.js')).href)
      const render = await ensureRender(bigDir, big.digest)
      const roots = path.join(bigDir, 'roots')
      let kind
      const made = []
      try {
        for (let i = 0; i < 100; i++) {
          const d = path.join(roots, String(i))
          fs.mkdirSync(d, { recursive: true })
          kind = prepareAppRoot(render, d).kind
          made.push(d)
          if (kind !== 'overlay') break
        }
        if (kind === 'overlay') {
          const one = du(render.rootfs)
          const uppers = made.reduce((n, d) => n + du(path.join(d, 'upper')) + du(path.join(d, 'work')), 0)
          const all = du(path.join(bigDir, 'images', 'renders')) + uppers
          out.disk_100_ratio = round(all / (one + uppers), 3)
          log(`images: 100 overlay app roots of the ${out.big_image_mb} MB image: ${round(all / MB, 1)} MB on disk, one render ${round(one / MB, 1)} MB + uppers ${round(uppers / MB, 2)} MB: ${out.disk_100_ratio}× (target ≤ 1.1)`)
        } else log('images: 100 app roots: overlayfs cannot be mounted here, skipped')
      } finally {
        for (const d of made) tearDownAppRoot(d)
      }
    } else log('images: 100 app roots: skipped (overlays need root)')

    // 6. 100 pods of the big image, each run to its end: one render, and what each pod keeps.
    if (process.getuid?.() === 0 && bin !== undefined) {
      const runDir = path.join(bigDir, 'pods', 'run')
      const before = new Set(fs.readdirSync(runDir))
      const renderPath = path.join(bigDir, 'images', 'renders', big.digest.slice('sha256:'.length))
      const one = du(renderPath)
      for (let i = 0; i < 100; i++) {
        const r = spawnSync(process.execPath, [BIN, '--dir', bigDir, 'run', '--image', 'big', '--', '/bin/true'], { env: childEnv, encoding: 'utf8' })
        if (r.status !== 0) throw new Error(`run --image big exited ${r.status}: ${r.stderr.slice(0, 500)}`)
      }
      const podDirs = fs.readdirSync(runDir).filter((u) => !before.has(u)).map((u) => path.join(runDir, u))
      const app = (d) => path.join(d, 'apps', 'big')
      const uppers = podDirs.reduce((n, d) => n + du(path.join(app(d), 'upper')) + du(path.join(app(d), 'work')), 0)
      const kinds = new Set(podDirs.map((d) => JSON.parse(fs.readFileSync(path.join(d, 'pod.json'), 'utf8')).apps[0].rootfs))
      const all = du(renderPath) + podDirs.reduce((n, d) => n + du(d), 0)
      out.pods_100 = podDirs.length
      out.pods_100_disk_mb = round(all / MB, 1)
      out.pods_100_uppers_mb = round(uppers / MB, 2)
      out.pods_100_ratio = round(all / (one + uppers), 3)
      log(`images: ${podDirs.length} pods of the ${out.big_image_mb} MB image (rootfs ${[...kinds].join(',')}): ${out.pods_100_disk_mb} MB on disk (the render after them and the pods' directories), one render ${round(one / MB, 1)} MB + uppers ${out.pods_100_uppers_mb} MB: ${out.pods_100_ratio}× (target ≤ 1.1)`)
    } else log('images: 100 pods: skipped (overlays need root; the pods need busybox)')
    return out
  } finally {
    spawnSync('sh', ['-c', `grep -o ' ${work}[^ ]*' /proc/self/mountinfo | xargs -r -n1 umount -l`])
    fs.rmSync(work, { recursive: true, force: true })
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const i = process.argv.indexOf('--reps')
  const reps = i > 0 ? Number(process.argv[i + 1]) : 3
  console.log(JSON.stringify(await measureImages({ reps }), null, 2))
}
