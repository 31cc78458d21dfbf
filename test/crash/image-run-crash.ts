// Image pods under SIGKILL (CONTRACT §13 on top of §12): SIGKILL the
// supervisor of a pod whose app runs from an image at a seeded random
// moment, in three phases:
//   - while the image is being rendered (a render for `userns: private`
//     that is not there yet: it is removed before each trial, as it is
//     missing the first time a pod of the image asks for that id map);
//   - while the pod starts (the render is there: the overlay, the bundle,
//     the container are being made);
//   - while the app runs (a detached pod, its supervisor killed).
// After each kill: the pod reads exited within a second, no process of it
// (nor of its runtime) is left; `gc --grace-period 0s` then leaves no
// overlay mounted, no container in the runtime, no work dir in the store,
// and every render in renders/ whole; and a later `run --image` of the
// same image (and id map) works and prints the image's file, so no half
// render is ever used. Seeded and reproducible: IMAGE_RUN_CRASH_SEED picks
// the schedule, IMAGE_RUN_CRASH_TRIALS the kills per phase (default 15).
import t from 'tap'
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { subordinateRange } from '../../lib/runtime/userns.js'
import { argvFor, launcher, podctl } from '../helpers/cli-util.js'
import { containersMissing } from '../helpers/containers.js'
import { pollUntil, seededRandom, type Test } from '../helpers/common.js'
import { OS_RELEASE, buildBusyboxImage, detachOverlaysUnder, missingTools, overlaysUnder, randomBytes, renderKeys, skopeoCopy } from '../helpers/images.js'
import { processesOfPod, runtimeList } from '../helpers/oci-util.js'
import { alive, allPids, dataDir, msUntilExited } from '../helpers/run-util.js'

const missing = missingTools() ?? containersMissing() ?? (process.getuid?.() === 0 ? undefined : 'overlays need root')
if (missing !== undefined) {
  t.comment(`skipped: ${missing}`)
  process.exit(0)
}

const seed = Number(process.env.IMAGE_RUN_CRASH_SEED ?? 20261127)
const trials = Number(process.env.IMAGE_RUN_CRASH_TRIALS ?? 15)
const rng = seededRandom(seed)

// Big enough that a render takes a while, so that kills land inside it.
const EXTRA_MB = 24
const fixtures = t.testdir({})
const built = buildBusyboxImage(fixtures, { extraMB: EXTRA_MB })
const ARCHIVE = path.join(fixtures, 'image.tar')
skopeoCopy(`oci:${built.layout}:${built.tag}`, `oci-archive:${ARCHIVE}`)
const BLOB_SHA = createHash('sha256').update(randomBytes(EXTRA_MB * 1024 * 1024)).digest('hex')

const read = (f: string): string => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : '')
const range = subordinateRange(read('/etc/subuid'), ['podctl']) !== undefined && subordinateRange(read('/etc/subgid'), ['podctl']) !== undefined
// Without podctl's range, the render phase removes the plain render instead: the same missing render, for host ids.
const RENDER_FLAGS = range ? ['--userns', 'private'] : []

const cmdline = (p: number): string => fs.readFileSync(`/proc/${p}/cmdline`, 'latin1')

/** Live processes of the runtime for pod `uuid` (their arguments name its containers). */
const runtimeProcessesOf = (uuid: string): number[] =>
  allPids().filter((p) => {
    try {
      const cmd = cmdline(p)
      return cmd.includes(uuid) && !cmd.includes('supervisor-main') && !cmd.includes('podctl') && alive(p)
    } catch {
      return false
    }
  })

const sha256File = (p: string): string => createHash('sha256').update(fs.readFileSync(p)).digest('hex')

/** Why a render is not whole, or undefined when it is. */
const renderProblem = (rootfs: string): string | undefined => {
  try {
    if (fs.readFileSync(path.join(rootfs, 'etc/os-release'), 'utf8') !== OS_RELEASE) return 'etc/os-release differs'
    if (fs.statSync(path.join(rootfs, 'bin/busybox')).size === 0) return 'bin/busybox is empty'
    if (sha256File(path.join(rootfs, 'srv/blob')) !== BLOB_SHA) return 'srv/blob is not whole'
    return undefined
  } catch (er) {
    return (er as Error).message
  }
}

/** Starts podctl; SIGKILLs it after `delayMs` if it still runs. Resolves when it has ended, with when it was killed (if it was). */
const killedAfter = (dir: string, args: string[], delayMs: number): Promise<{ killedAt?: number; status: number | null }> =>
  new Promise((resolve) => {
    const [cmd, argv] = launcher(argvFor(dir, args), false)
    const child = spawn(cmd, argv, { stdio: ['ignore', 'ignore', 'ignore'] })
    let killedAt: number | undefined
    const timer = setTimeout(() => {
      killedAt = Date.now()
      child.kill('SIGKILL')
    }, delayMs)
    child.on('exit', (status) => {
      clearTimeout(timer)
      resolve({ ...(killedAt !== undefined ? { killedAt } : {}), status })
    })
  })

/** After a SIGKILL of pod `uuid`'s supervisor at `killedAt`: it reads exited within a second, and nothing of it runs. */
const checkGone = async (t: Test, dir: string, uuid: string, what: string, killedAt: number): Promise<void> => {
  const exitedIn = await msUntilExited(dir, uuid, killedAt)
  if (exitedIn > 1_000) t.fail(`${what}: the pod read exited only after ${exitedIn} ms`)
  try {
    await pollUntil(`${what}: no process in pod ${uuid}`, () => processesOfPod(uuid).length === 0, { polls: 100, intervalMs: 10 })
  } catch {
    t.fail(`${what}: processes of the pod left: ${processesOfPod(uuid).join(' ')}`)
  }
  try {
    // The runtime's own processes end after the kernel has ended the pod: a little later.
    await pollUntil(`${what}: no runtime process of pod ${uuid}`, () => runtimeProcessesOf(uuid).length === 0, { polls: 100, intervalMs: 100 })
  } catch {
    t.fail(`${what}: runtime processes left: ${runtimeProcessesOf(uuid).map((p) => `${p} ${cmdline(p).replaceAll('\0', ' ')}`).join('; ')}`)
  }
}

/** gc, then: no overlay, no container, no work dir, every render whole; and a new pod of the image prints its file. */
const checkCollected = (t: Test, dir: string, what: string, flags: string[]): void => {
  const gc = podctl(dir, ['gc', '--grace-period', '0s'])
  t.equal(gc.status, 0, `${what}: gc`, { stderr: gc.stderr })
  const left = overlaysUnder(dir)
  if (left.length > 0) t.fail(`${what}: overlays left after gc: ${left.join(' ')}`)
  const containers = runtimeList(dir)
  if (containers.length > 0) t.fail(`${what}: containers left in the runtime after gc: ${containers.join(' ')}`)
  const tmp = fs.readdirSync(path.join(dir, 'images', 'tmp'))
  if (tmp.length > 0) t.fail(`${what}: work dirs left after gc: ${tmp.join(' ')}`)
  for (const key of renderKeys(dir)) {
    const problem = renderProblem(path.join(dir, 'images', 'renders', key, 'rootfs'))
    if (problem !== undefined) t.fail(`${what}: render ${key.slice(0, 12)} in renders/ is not whole: ${problem}`)
  }
  const next = podctl(dir, ['run', ...flags, '--image', 'crash:1', '--', '-c', 'cat /etc/os-release; busybox sha256sum /srv/blob'])
  if (next.status !== 0 || next.stdout !== `${OS_RELEASE}${BLOB_SHA}  /srv/blob\n`) t.fail(`${what}: a later pod of the image: exit ${next.status}, ${JSON.stringify(next.stdout.slice(0, 200))} ${next.stderr}`)
}

/** The key in renders/ of the image's render for `flags`' id map; '' while there is none. */
const renderKeyFor = (dir: string, digest: string, flags: string[]): string => {
  const hex = digest.slice('sha256:'.length)
  const shifted = flags.includes('private')
  return renderKeys(dir).find((k) => (shifted ? k.startsWith(`${hex}+`) : k === hex)) ?? ''
}

/** A data dir holding the image as crash:1, its overlays taken down at teardown whatever happened. */
const crashDataDir = (t: Test): { dir: string; digest: string } => {
  let dir = ''
  t.teardown(() => detachOverlaysUnder(dir))
  dir = dataDir(t)
  const r = podctl(dir, ['image', 'import', `oci-archive:${ARCHIVE}`, '--name', 'crash:1'])
  if (r.status !== 0) throw new Error(`image import: ${r.stderr}`)
  return { dir, digest: r.stdout.trim() }
}

/** How long a foreground run takes here (its median of three), so that kills land all through it. */
const span = async (dir: string, args: string[], before: () => void = () => {}): Promise<number> => {
  const xs: number[] = []
  for (let i = 0; i < 3; i++) {
    before()
    const t0 = Date.now()
    await killedAfter(dir, args, 600_000)
    xs.push(Date.now() - t0)
  }
  return Math.max(150, xs.sort((a, b) => a - b)[1]!)
}

/**
 * A foreground `run --image` killed at a random moment of `ms`; then the
 * checks. Says whether the kill found the pod in run/ and whether its
 * render was in place then.
 */
const foregroundTrial = async (t: Test, dir: string, digest: string, flags: string[], ms: number, what: string): Promise<{ ran: boolean; rendered: boolean; midRender: boolean }> => {
  const file = path.join(path.dirname(dir), `uuid-${Math.random().toString(36).slice(2)}`)
  // Node's own start takes the first third or so: kills land after it.
  const delay = Math.floor(ms * (0.25 + rng() * 0.85))
  const r = await killedAfter(dir, ['run', '--uuid-file-save', file, ...flags, '--image', 'crash:1', '--', '-c', 'cat /etc/os-release > /dev/null; sleep 2'], delay)
  const tag = `${what} (killed after ${delay} ms)`
  const rendered = renderKeyFor(dir, digest, flags) !== ''
  const midRender = fs.readdirSync(path.join(dir, 'images', 'tmp')).some((n) => n.startsWith('render-'))
  if (r.killedAt === undefined) {
    t.fail(`${tag}: the pod ended (${r.status}) before it was killed`)
    return { ran: false, rendered, midRender }
  }
  const uuid = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim() : undefined
  // Killed before the pod was in run/ (its UUID is saved while it is still being prepared): a prepare's leftovers, for gc.
  if (uuid === undefined || uuid === '' || ['preparing', 'prepared', 'aborted prepare', 'embryo'].includes(podFromUUIDString(dir, uuid).state)) {
    checkCollected(t, dir, tag, flags)
    return { ran: false, rendered, midRender }
  }
  await checkGone(t, dir, uuid, tag, r.killedAt)
  checkCollected(t, dir, tag, flags)
  return { ran: true, rendered, midRender }
}

t.test(`SIGKILL while an image is rendered for a pod (${trials} trials, seed ${seed})`, async (t) => {
  const { dir, digest } = crashDataDir(t)
  if (!range) t.comment('no podctl range in /etc/subuid: the plain render is removed before each trial instead')
  const unrender = (): void => {
    const key = renderKeyFor(dir, digest, RENDER_FLAGS)
    if (key !== '') fs.rmSync(path.join(dir, 'images', 'renders', key), { recursive: true, force: true })
  }
  const ms = await span(dir, ['run', ...RENDER_FLAGS, '--image', 'crash:1', '--entrypoint', '/bin/true'], unrender)
  t.comment(`a first pod of the image, render included, takes about ${ms} ms`)
  let inRender = 0
  let midRender = 0
  for (let i = 0; i < trials; i++) {
    unrender()
    const r = await foregroundTrial(t, dir, digest, RENDER_FLAGS, ms, `render trial ${i}`)
    if (r.ran && !r.rendered) inRender++
    if (r.midRender) midRender++
  }
  t.comment(`${midRender} of ${trials} kills left a render half-made in images/tmp`)
  t.ok(inRender > 0, `some kills found the pod in run/ and its render not in place yet (${inRender} of ${trials})`)
})

t.test(`SIGKILL while an image pod starts (${trials} trials, seed ${seed})`, async (t) => {
  const { dir, digest } = crashDataDir(t)
  const ms = await span(dir, ['run', '--image', 'crash:1', '--entrypoint', '/bin/true'])
  t.comment(`a pod of the rendered image takes about ${ms} ms`)
  let ran = 0
  for (let i = 0; i < trials; i++) if ((await foregroundTrial(t, dir, digest, [], ms, `start trial ${i}`)).ran) ran++
  t.ok(ran > trials / 3, `many kills hit a pod in run/ (${ran} of ${trials}), the others one still being prepared`)
})

t.test(`SIGKILL of a running image pod's supervisor (${trials} trials, seed ${seed})`, async (t) => {
  const { dir } = crashDataDir(t)
  for (let i = 0; i < trials; i++) {
    const flags = rng() < 0.5 && range ? ['--userns', 'private'] : []
    const what = `running trial ${i}${flags.length ? ' (userns private)' : ''}`
    const up = podctl(dir, ['run', '--detach', ...flags, '--image', 'crash:1', '--', '-c', 'sleep 300 & setsid sleep 301 & (trap "" TERM; sleep 302) & echo $$ > /tmp/pid; while :; do echo x >> /srv/log; done'])
    if (up.status !== 0) {
      t.fail(`${what}: run --detach exited ${up.status}: ${up.stderr}`)
      continue
    }
    const uuid = up.stdout.trim()
    const pid = JSON.parse(podctl(dir, ['status', uuid, '--format', 'json']).stdout).pid as number
    await new Promise((r) => setTimeout(r, Math.floor(rng() * 400)))
    process.kill(pid, 'SIGKILL')
    await checkGone(t, dir, uuid, what, Date.now())
    checkCollected(t, dir, what, flags)
  }
  t.pass(`${trials} trials done`)
})
