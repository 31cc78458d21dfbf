// The example exec provisioners of Documentation/examples/provisioners/,
// through the real CLI: a class made with each, a pod whose claim `run`
// provisions inline (the app's file lands where the provisioner said), the
// claim bound, and `volume claim rm` deleting the storage (reclaim delete).
// The ext4 one only as root with working loop mounts: it proves the size is
// a real limit (ENOSPC in the app) and that nothing stays mounted or attached.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ROOT, STACK_RE } from '../helpers/common.js'
import { podctl } from '../helpers/cli-util.js'

const EXAMPLES = path.join(ROOT, 'Documentation', 'examples', 'provisioners')
const DIR_PROV = path.join(EXAMPLES, 'dir-provisioner.sh')
const EXT4_PROV = path.join(EXAMPLES, 'ext4-provisioner.sh')
const SBIN_PATH = `${process.env.PATH ?? '/usr/bin:/bin'}:/usr/sbin:/sbin`

const json = (s: string): any => JSON.parse(s)

const claimManifest = (claim: string, cls: string, size: string, cmd: string) => ({
  apiVersion: 'podctl/v1',
  apps: [{ name: 'a', exec: ['/bin/sh', '-c', cmd], mounts: [{ volume: 'data', path: '/data' }] }],
  volumes: [{ name: 'data', kind: 'persistent', claim, class: cls, size }],
})

/** Runs an example provisioner directly, as podctl does: the verb, JSON on stdin. */
const callProvisioner = (prog: string, verb: string, input: unknown, opts: { uid?: number; gid?: number } = {}) =>
  spawnSync(prog, [verb], { input: JSON.stringify(input), encoding: 'utf8', ...opts })

/** The volume's record as stored (volume.json), with how it was provisioned. */
const volumeRecord = (dir: string, name: string): any => json(fs.readFileSync(path.join(dir, 'volumes', name, 'volume.json'), 'utf8'))

/** The pod UUIDs of a data dir, per `list`. */
const pods = (dir: string): string[] => json(podctl(dir, ['list', '--format', 'json']).stdout).map((p: { uuid: string }) => p.uuid)

/** Mount points (unescaped) under `prefix`, per /proc/self/mountinfo. */
const mountsUnder = (prefix: string): string[] =>
  fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(' ')[4]!.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))))
    .filter((m) => m === prefix || m.startsWith(`${prefix}/`))

/** Loop devices backed by `image` (losetup -j). */
const loopsOf = (image: string): string[] =>
  String(spawnSync('losetup', ['--list', '--noheadings', '--output', 'NAME', '--associated', image], { encoding: 'utf8', env: { ...process.env, PATH: SBIN_PATH } }).stdout ?? '')
    .split('\n')
    .map((s) => s.trim())
    .filter(Boolean)

const run = (cmd: string, args: string[]) => spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, PATH: SBIN_PATH } })

t.test('both examples are executable POSIX sh scripts that explain a wrong call', async (t) => {
  for (const prog of [DIR_PROV, EXT4_PROV]) {
    const st = fs.statSync(prog)
    t.equal(st.mode & 0o777, 0o755, `${path.basename(prog)} is mode 755`)
    t.match(fs.readFileSync(prog, 'utf8'), /^#!\/bin\/sh\n/, 'a #!/bin/sh script')
    const r = callProvisioner(prog, 'resize', {})
    t.equal(r.status, 1, 'an unknown verb: exit 1')
    t.match(r.stderr, /usage: .* provision\|delete/)
    t.equal(r.stdout, '', 'nothing on stdout')
  }
})

t.test('dir-provisioner: a directory per volume under its root; the app writes into it; claim rm deletes it', async (t) => {
  const base = t.testdir({ store: {}, outside: { keep: { g: 'x' } } })
  const dir = path.join(base, 'data')
  const store = fs.realpathSync(path.join(base, 'store'))
  // Installed as this node's provisioner "dir" (a link in its provisioners directory), as README.md shows.
  const provisioners = path.join(base, 'provisioners')
  fs.mkdirSync(provisioners, { mode: 0o755 })
  fs.symlinkSync(DIR_PROV, path.join(provisioners, 'dir'))
  const mk = podctl(dir, ['volume', 'class', 'create', 'dirs', '--provisioner', 'exec:dir', '--param', `root=${store}`])
  t.equal(mk.status, 0, mk.stderr)
  fs.writeFileSync(path.join(base, 'm.json'), JSON.stringify(claimManifest('db', 'dirs', '1M', 'echo hi > $PODCTL_APP_ROOT/data/f')))
  const r = podctl(dir, ['run', '--manifest', path.join(base, 'm.json'), '--provisioners-dir', provisioners])
  t.equal(r.status, 0, r.stderr)

  const claim = json(podctl(dir, ['volume', 'claim', 'inspect', 'db', '--format', 'json']).stdout)
  t.match(claim, { name: 'db', class: 'dirs', size_bytes: 1_048_576, phase: 'bound', volume: /^pvc-/ })
  t.same(claim.events.map((e: { reason: string }) => e.reason), ['Provisioning', 'ProvisioningSucceeded'])
  const vdir = path.join(store, claim.volume)
  t.equal(fs.readFileSync(path.join(vdir, 'f'), 'utf8'), 'hi\n', "the app's file is in the provisioner's directory")
  t.match(volumeRecord(dir, claim.volume).provisioned, { class: 'dirs', path: vdir, capacity_bytes: 1_048_576 }, 'the answer is recorded')

  // Called again with the same volume name (a crash before podctl recorded the answer): the same directory.
  const req = {
    volume_name: claim.volume,
    claim: { name: 'db', size_bytes: 1_048_576, access_mode: 'ReadWriteOnce' },
    class: { name: 'dirs', parameters: { root: store } },
    data_dir: dir,
  }
  const again = callProvisioner(DIR_PROV, 'provision', req)
  t.equal(again.status, 0, again.stderr)
  t.same(json(again.stdout), { path: vdir, capacity_bytes: 1_048_576 }, 'provision again: the same answer')
  t.equal(fs.readFileSync(path.join(vdir, 'f'), 'utf8'), 'hi\n', 'and the data is untouched')

  // A volume that is not under its base is not this provisioner's to delete.
  const outside = path.join(base, 'outside')
  const foreign = callProvisioner(DIR_PROV, 'delete', { name: 'keep', path: path.join(outside, 'keep'), capacity_bytes: null, class: 'dirs', parameters: { root: store }, claim: 'x' })
  t.equal(foreign.status, 0, foreign.stderr)
  t.match(json(foreign.stdout), { ignored: /not a directory dir-provisioner made/ })
  t.ok(fs.existsSync(path.join(outside, 'keep', 'g')), 'an ignored delete removes nothing')

  const busy = podctl(dir, ['volume', 'claim', 'rm', 'db'])
  t.equal(busy.status, 4, 'in use by a pod that is not removed: exit 4')
  t.ok(fs.existsSync(vdir), 'and its directory stays')
  for (const uuid of pods(dir)) t.equal(podctl(dir, ['rm', uuid]).status, 0)
  const rm = podctl(dir, ['volume', 'claim', 'rm', 'db', '--provisioners-dir', provisioners])
  t.equal(rm.status, 0, rm.stderr)
  t.equal(rm.stdout, 'db\n')
  t.notOk(fs.existsSync(vdir), 'reclaim delete: the provisioner removed its directory')
  t.same(fs.readdirSync(store), [], 'nothing else was left in the base')
  t.notOk(fs.existsSync(path.join(dir, 'volumes', claim.volume)), 'and the volume is gone')
  t.equal(podctl(dir, ['volume', 'claim', 'inspect', 'db']).status, 3, 'so is the claim')

  // A delete called again (cut short before podctl recorded it) is fine.
  const twice = callProvisioner(DIR_PROV, 'delete', { name: claim.volume, path: vdir, capacity_bytes: 1_048_576, class: 'dirs', parameters: { root: store }, claim: 'db' })
  t.equal(twice.status, 0, twice.stderr)
  t.same(json(twice.stdout), {})
})

t.test('dir-provisioner without its root parameter: the run fails with its message (exit 125), nothing made', async (t) => {
  const base = t.testdir({})
  const dir = path.join(base, 'data')
  t.equal(podctl(dir, ['volume', 'class', 'create', 'dirs', '--provisioner', `exec:${DIR_PROV}`]).status, 0)
  fs.writeFileSync(path.join(base, 'm.json'), JSON.stringify(claimManifest('db', 'dirs', '1M', 'true')))
  const r = podctl(dir, ['run', '--manifest', path.join(base, 'm.json')])
  t.equal(r.status, 125)
  t.match(r.stderr, /cannot provision a volume for claim db: .*class parameter "root" is missing/)
  t.notMatch(r.stderr, STACK_RE)
  const c = json(podctl(dir, ['volume', 'claim', 'inspect', 'db', '--format', 'json']).stdout)
  t.equal(c.phase, 'pending')
  t.match(c.events.at(-1), { type: 'Warning', reason: 'ProvisioningFailed', message: /root" is missing/ })
})

t.test('ext4-provisioner refuses clearly when not root', async (t) => {
  const asRoot = process.getuid?.() === 0
  const base = t.testdir({ images: {} })
  const images = path.join(base, 'images')
  const req = { volume_name: 'pvc-x', claim: { name: 'db', size_bytes: 8 << 20, access_mode: 'ReadWriteOnce' }, class: { name: 'e', parameters: { root: images } }, data_dir: '/nonexistent' }
  const as = asRoot ? { uid: 65534, gid: 65534 } : {}
  // As root, the script is run as nobody, who must be able to reach it (a checkout under a private home may not let it).
  const reach = spawnSync('/bin/sh', ['-c', 'test -r "$0" && test -x "$0" && command -v node >/dev/null', EXT4_PROV], as)
  if (reach.error || reach.status !== 0) return t.plan(0, `skipped: uid ${asRoot ? 65534 : process.getuid?.()} cannot run ${EXT4_PROV} with node`)
  const r = callProvisioner(EXT4_PROV, 'provision', req, as)
  t.equal(r.status, 1)
  t.match(r.stderr, /ext4-provisioner: must run as root/)
  t.equal(r.stdout, '')
  t.same(fs.readdirSync(images), [], 'nothing made')
})

/** Why ext4 volumes cannot be tried here, or undefined when they can (root, mkfs.ext4, a loop mount works). */
const ext4Unavailable = (): string | undefined => {
  if (process.getuid?.() !== 0) return 'loop-mounting an ext4 image needs root; this run is not root'
  for (const tool of ['mkfs.ext4', 'mount', 'umount', 'mountpoint', 'losetup']) {
    if (run('/bin/sh', ['-c', `command -v ${tool}`]).status !== 0) return `${tool} is not installed`
  }
  const probe = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-ext4-probe-'))
  try {
    const img = path.join(probe, 'probe.img')
    const mnt = path.join(probe, 'mnt')
    fs.mkdirSync(mnt)
    fs.writeFileSync(img, '')
    fs.truncateSync(img, 2 << 20)
    const mkfs = run('mkfs.ext4', ['-q', '-F', img])
    if (mkfs.status !== 0) return `mkfs.ext4 fails here: ${mkfs.stderr.trim()}`
    const mount = run('mount', ['-o', 'loop', img, mnt])
    if (mount.status !== 0) return `cannot loop-mount an ext4 image here: ${mount.stderr.trim()}`
    run('umount', [mnt])
    return undefined
  } finally {
    run('umount', [path.join(probe, 'mnt')])
    for (const dev of loopsOf(path.join(probe, 'probe.img'))) run('losetup', ['-d', dev])
    fs.rmSync(probe, { recursive: true, force: true })
  }
}

t.test('ext4-provisioner: a loop-mounted image whose size is a real limit (ENOSPC); claim rm unmounts, detaches and removes it', async (t) => {
  const why = ext4Unavailable()
  if (why !== undefined) return t.plan(0, `skipped: ${why}`)
  // Not a t.testdir: the teardown must unmount before anything is removed.
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-ext4-'))
  t.teardown(() => {
    for (const m of mountsUnder(base).reverse()) {
      if (run('umount', [m]).status !== 0) run('umount', ['-l', m])
    }
    const images = path.join(base, 'images')
    for (const img of fs.existsSync(images) ? fs.readdirSync(images, { withFileTypes: true }) : []) {
      if (img.isFile()) for (const dev of loopsOf(path.join(images, img.name))) run('losetup', ['-d', dev])
    }
    if (mountsUnder(base).length === 0) fs.rmSync(base, { recursive: true, force: true })
  })
  const dir = path.join(base, 'data')
  const images = path.join(base, 'images')
  fs.mkdirSync(images)
  const mk = podctl(dir, ['volume', 'class', 'create', 'ext4', '--provisioner', `exec:${EXT4_PROV}`, '--param', `root=${images}`])
  t.equal(mk.status, 0, mk.stderr)
  const size = 8 * 1024 * 1024
  const cmd = 'echo hi > $PODCTL_APP_ROOT/data/f || exit 10; dd if=/dev/zero of=$PODCTL_APP_ROOT/data/big bs=1M count=16'
  fs.writeFileSync(path.join(base, 'm.json'), JSON.stringify(claimManifest('db', 'ext4', '8Mi', cmd)))
  const r = podctl(dir, ['run', '--manifest', path.join(base, 'm.json')])
  t.not(r.status, 0, 'writing 16 MiB into an 8 MiB volume fails')
  t.not(r.status, 125, "the app's failure, not podctl's")
  t.not(r.status, 10, 'the first, small write worked')
  t.match(`${r.stdout}${r.stderr}`, /No space left on device/, 'with ENOSPC')

  const claim = json(podctl(dir, ['volume', 'claim', 'inspect', 'db', '--format', 'json']).stdout)
  t.match(claim, { name: 'db', class: 'ext4', size_bytes: size, phase: 'bound', volume: /^pvc-/ })
  const mnt = path.join(fs.realpathSync(images), claim.volume)
  const img = `${mnt}.img`
  const prov = volumeRecord(dir, claim.volume).provisioned
  t.equal(prov.path, path.join(mnt, 'data'), 'the volume is the data directory inside the mounted image')
  t.ok(prov.capacity_bytes >= size, `the real capacity (${prov.capacity_bytes}) is the file system's, at least the size asked for`)
  t.ok(fs.statSync(img).size > size && fs.statSync(img).size < 2 * size, `the image (${fs.statSync(img).size} bytes) is larger than that by ext4's metadata`)
  t.same(mountsUnder(mnt), [mnt], 'the image is mounted at its mount point')
  t.equal(loopsOf(img).length, 1, 'through one loop device')
  t.equal(fs.readFileSync(path.join(mnt, 'data', 'f'), 'utf8'), 'hi\n', "the app's file is inside the image")
  t.ok(fs.statSync(path.join(mnt, 'data', 'big')).size <= prov.capacity_bytes, 'the big write stopped at the capacity')

  // Called again with the same volume name (a crash before podctl recorded the answer): the same answer, no second mount.
  const req = { volume_name: claim.volume, claim: { name: 'db', size_bytes: size, access_mode: 'ReadWriteOnce' }, class: { name: 'ext4', parameters: { root: images } }, data_dir: dir }
  const again = callProvisioner(EXT4_PROV, 'provision', req)
  t.equal(again.status, 0, again.stderr)
  t.same(json(again.stdout), { path: prov.path, capacity_bytes: prov.capacity_bytes }, 'provision again: the same answer')
  t.same(mountsUnder(mnt), [mnt], 'still mounted once')
  t.equal(loopsOf(img).length, 1, 'still one loop device')

  for (const uuid of pods(dir)) t.equal(podctl(dir, ['rm', uuid]).status, 0)
  const rm = podctl(dir, ['volume', 'claim', 'rm', 'db'])
  t.equal(rm.status, 0, rm.stderr)
  t.equal(rm.stdout, 'db\n')
  t.same(mountsUnder(base), [], 'nothing is mounted any more (/proc/self/mountinfo)')
  t.same(loopsOf(img), [], 'no loop device is attached to the image')
  t.notOk(fs.existsSync(img), 'the image is removed')
  t.notOk(fs.existsSync(mnt), 'and its mount point')
  t.same(fs.readdirSync(images), [], 'nothing else is left in the base')
  t.notOk(fs.existsSync(path.join(dir, 'volumes', claim.volume)), 'and the volume is gone')
})

t.test('ext4-provisioner: a claim without a size is refused with a message', async (t) => {
  if (process.getuid?.() !== 0) return t.plan(0, 'skipped: the provisioner refuses non-root before it looks at the size; this run is not root')
  const base = t.testdir({ images: {} })
  const req = { volume_name: 'pvc-y', claim: { name: 'db', size_bytes: null, access_mode: 'ReadWriteOnce' }, class: { name: 'e', parameters: { root: path.join(base, 'images') } }, data_dir: '/nonexistent' }
  const r = callProvisioner(EXT4_PROV, 'provision', req)
  if (r.status === 1 && /is missing/.test(r.stderr)) return t.plan(0, `skipped: ${r.stderr.trim()}`)
  t.equal(r.status, 1)
  t.match(r.stderr, /claim db asks for no size: an ext4 volume needs one/)
  t.same(fs.readdirSync(path.join(base, 'images')), [], 'nothing made')
})
