// podctl image (CONTRACT §13), black box: a busybox image built with umoci
// and converted with skopeo, imported from every kind of source, then
// listed, inspected, tagged, removed and pruned; names from the sources;
// platforms of a multi-platform index; images pods use; pull through
// skopeo; the leftovers gc removes.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import zlib from 'node:zlib'
import { podctl } from '../helpers/cli-util.js'
import { STACK_RE, TIME_RE, type Test } from '../helpers/common.js'
import { OS_RELEASE, buildBusyboxImage, hostArch, layerTar, missingTools, skopeoCopy, writeLayout } from '../helpers/images.js'

const missing = missingTools()
if (missing !== undefined) {
  t.comment(`skipped: ${missing}`)
  process.exit(0)
}

const fixtures = t.testdir({})
const built = buildBusyboxImage(fixtures)
const OCI_ARCHIVE = path.join(fixtures, 'busybox-oci.tar')
const DOCKER_ARCHIVE = path.join(fixtures, 'busybox-docker.tar')
skopeoCopy(`oci:${built.layout}:${built.tag}`, `oci-archive:${OCI_ARCHIVE}:${built.tag}`)
skopeoCopy(`oci:${built.layout}:${built.tag}`, `docker-archive:${DOCKER_ARCHIVE}:busy:1`)
const OCI_DIGEST = JSON.parse(fs.readFileSync(path.join(built.layout, 'index.json'), 'utf8')).manifests[0].digest as string

const DIGEST_RE = /^sha256:[0-9a-f]{64}$/
const lines = (s: string): string[] => s.split('\n').filter(Boolean)

/** Runs `podctl image ...args` and expects exit 0 with nothing on stderr. */
const ok = (t: Test, dir: string, args: string[], input?: Buffer | string): string => {
  const r = spawnSync('/usr/bin/env', ['-u', 'NODE_OPTIONS', process.execPath, path.resolve('bin/podctl'), '--dir', dir, 'image', ...args], { encoding: 'utf8', input: input ?? '' })
  t.equal(r.status, 0, `image ${args.join(' ')}: exit 0`, { stderr: r.stderr })
  t.equal(r.stderr, '', `image ${args.join(' ')}: nothing on stderr`)
  return r.stdout
}

const renderOf = (dir: string, digest: string): string => path.join(dir, 'images', 'renders', digest.slice('sha256:'.length), 'rootfs')
const blobs = (dir: string): string[] => fs.readdirSync(path.join(dir, 'images', 'blobs', 'sha256')).sort()

t.test('every kind of source imports, prints the digest alone, and renders the image', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const gz = zlib.gzipSync(fs.readFileSync(DOCKER_ARCHIVE))
  const sources: [string, string[], Buffer | undefined, string][] = [
    ['an OCI layout, oci:DIR:TAG', [`oci:${built.layout}:${built.tag}`], undefined, OCI_DIGEST],
    ['an OCI layout, DIR', [built.layout], undefined, OCI_DIGEST],
    ['an OCI archive', [`oci-archive:${OCI_ARCHIVE}`], undefined, OCI_DIGEST],
    ['an OCI archive, with its tag', [`oci-archive:${OCI_ARCHIVE}:${built.tag}`], undefined, OCI_DIGEST],
    ['an OCI archive as a plain path', [OCI_ARCHIVE], undefined, OCI_DIGEST],
    ['an OCI archive on stdin', ['-'], fs.readFileSync(OCI_ARCHIVE), OCI_DIGEST],
    ['a Docker archive', [`docker-archive:${DOCKER_ARCHIVE}`], undefined, ''],
    ['a Docker archive on stdin', ['-'], fs.readFileSync(DOCKER_ARCHIVE), ''],
    ['a gzip-compressed Docker archive on stdin (docker save | gzip)', ['-'], gz, ''],
  ]
  let dockerDigest = ''
  for (const [what, args, input, want] of sources) {
    const out = ok(t, dir, ['import', ...args], input)
    t.match(out, /^sha256:[0-9a-f]{64}\n$/, `${what}: the digest and nothing else`)
    const digest = out.trim()
    if (want !== '') t.equal(digest, want, `${what}: the layout's manifest digest`)
    else {
      dockerDigest ||= digest
      t.equal(digest, dockerDigest, `${what}: the same digest every time (podctl writes the same manifest for it)`)
    }
  }
  for (const d of [OCI_DIGEST, dockerDigest]) {
    const root = renderOf(dir, d)
    t.equal(fs.readFileSync(path.join(root, 'etc/os-release'), 'utf8'), OS_RELEASE, "the image's file, not the host's")
    t.equal(fs.readlinkSync(path.join(root, 'bin/sh')), 'busybox')
    t.equal(fs.statSync(path.join(root, 'bin/busybox')).mode & 0o777, 0o755)
    const data = fs.statSync(path.join(root, 'srv/data'))
    t.strictSame([data.uid, data.gid, data.mode & 0o777], [1000, 1000, 0o640], 'owners and modes as in the image')
    t.equal(fs.statSync(path.join(root, 'srv/hardlink')).ino, data.ino, 'hard links stay links')
  }
  t.equal(fs.readdirSync(path.join(dir, 'images', 'renders')).length, 2, 'one render per image, however many imports')
  t.strictSame(fs.readdirSync(path.join(dir, 'images', 'tmp')), [], 'no work dir left')
})

t.test('import is idempotent: the same image again stores nothing twice', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const first = ok(t, dir, ['import', `oci-archive:${OCI_ARCHIVE}`, '--name', 'busybox'])
  const before = { blobs: blobs(dir), index: JSON.parse(fs.readFileSync(path.join(dir, 'images', 'index.json'), 'utf8')) }
  const again = ok(t, dir, ['import', `oci:${built.layout}:${built.tag}`, '--name', 'busybox'])
  t.equal(again, first)
  t.strictSame(blobs(dir), before.blobs, 'the same blobs')
  t.strictSame(JSON.parse(fs.readFileSync(path.join(dir, 'images', 'index.json'), 'utf8')), before.index, 'the same index (the first import time kept)')
})

t.test('names: --name, a Docker archive\'s RepoTags, or none (<none>); JSON fields', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  ok(t, dir, ['import', `oci:${built.layout}`])
  ok(t, dir, ['import', `docker-archive:${DOCKER_ARCHIVE}`])
  ok(t, dir, ['import', `oci:${built.layout}:${built.tag}`, '--name', 'registry.example.com:5000/team/app'])
  const table = lines(ok(t, dir, ['list']))
  t.match(table[0], /^NAME\s+TAG\s+DIGEST\s+SIZE\s+CREATED$/)
  t.match(table[1], /^docker\.io\/library\/busy\s+1\s+[0-9a-f]{12}\s+\d[\d.]* [kM]B\s+(\d+ \w+ ago|just now)$/, 'skopeo\'s RepoTag, as it wrote it')
  t.match(table[2], new RegExp(`^registry\\.example\\.com:5000/team/app\\s+latest\\s+${OCI_DIGEST.slice(7, 19)}\\s`), 'tag latest by default')
  t.equal(table.length, 3, 'the layout image is named now, so no <none> row')
  // CREATED ages between the two lists (a second may pass): the rows are compared without it.
  const withoutAge = (rows: string[]) => rows.map((r) => r.split(/ {2,}/).slice(0, 4))
  t.strictSame(withoutAge(lines(ok(t, dir, ['list', '--no-legend']))), withoutAge(table.slice(1)), '--no-legend: the rows alone')
  t.equal(lines(ok(t, dir, ['ls', '-q'])).length, 2, '-q: each digest once')
  const json = JSON.parse(ok(t, dir, ['list', '--format', 'json'])) as Record<string, unknown>[]
  t.strictSame(Object.keys(json[0]!).sort(), ['created', 'digest', 'layers', 'name', 'size_bytes', 'tag'])
  t.match(json[1], { name: 'registry.example.com:5000/team/app', tag: 'latest', digest: OCI_DIGEST, layers: 1 })
  t.ok((json[1]!.size_bytes as number) > 1_000_000, 'size: what its layers unpack to')
  const d2 = path.join(t.testdir({}), 'data')
  ok(t, d2, ['import', `oci:${built.layout}`])
  t.match(lines(ok(t, d2, ['list']))[1], /^<none>\s+<none>\s+[0-9a-f]{12}\s/, 'an OCI layout whose ref name is a bare tag gives no name (as skopeo writes it)')
  t.match(JSON.parse(ok(t, d2, ['list', '--format', 'json']))[0], { name: null, tag: null })
})

t.test('inspect shows the config an app of the image defaults to; by name or by a digest prefix of 12+', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  ok(t, dir, ['import', built.layout, '--name', 'busybox:1'])
  const text = ok(t, dir, ['inspect', 'busybox:1'])
  for (const line of [`digest=${OCI_DIGEST}`, 'name=busybox:1', 'os=linux', `architecture=${hostArch()}`, 'layers=1', 'entrypoint=["/bin/sh"]', 'cmd=["-c","cat /etc/os-release"]', 'env=PATH=/bin', 'env=GREETING=hello', 'working_dir=/srv', 'user=0:0', 'label-team=infra']) {
    t.ok(lines(text).includes(line), line)
  }
  t.equal(ok(t, dir, ['inspect', OCI_DIGEST.slice(7, 19)]), text, '12 hex digits name it')
  t.equal(ok(t, dir, ['inspect', OCI_DIGEST]), text, 'the whole digest too')
  const json = JSON.parse(ok(t, dir, ['inspect', 'busybox:1', '--format', 'json']))
  t.match(json, { digest: OCI_DIGEST, names: ['busybox:1'], entrypoint: ['/bin/sh'], cmd: ['-c', 'cat /etc/os-release'], env: ['PATH=/bin', 'GREETING=hello'], working_dir: '/srv', user: '0:0', labels: { team: 'infra' } })
  t.match(json.created, /^\d{4}-\d\d-\d\dT/)
  t.match(json.imported_at, TIME_RE)
  const none = podctl(dir, ['image', 'inspect', 'busybox:2'])
  t.equal(none.status, 3, 'no such image: exit 3')
  t.equal(none.stderr, 'podctl: no such image: busybox:2 (no tag 2 of it is stored)\nthe tags there are: busybox:1; name one, e.g. busybox:1\n', 'the tags of the name there are')
  t.equal(podctl(dir, ['image', 'inspect', OCI_DIGEST.slice(7, 18)]).status, 3, '11 hex digits are not a digest prefix')
  const bad = podctl(dir, ['image', 'inspect', 'Not_A_Name'])
  t.equal(bad.status, 2)
  t.match(bad.stderr, /invalid image name "Not_A_Name"/)
})

t.test('tag, rm and prune', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  ok(t, dir, ['import', built.layout, '--name', 'a'])
  t.equal(ok(t, dir, ['tag', 'a', 'b:2']), '', 'tag prints nothing')
  t.strictSame(JSON.parse(ok(t, dir, ['list', '--format', 'json'])).map((r: { name: string; tag: string }) => `${r.name}:${r.tag}`), ['a:latest', 'b:2'])
  t.equal(ok(t, dir, ['rm', 'a']), 'untagged a:latest\n', 'one name of two: the name goes, the image stays')
  t.ok(fs.existsSync(renderOf(dir, OCI_DIGEST)))
  t.equal(ok(t, dir, ['rm', 'b:2']), `untagged b:2\ndeleted ${OCI_DIGEST}\n`, 'the last name: the image goes')
  t.strictSame(blobs(dir), [], 'its blobs')
  t.strictSame(fs.readdirSync(path.join(dir, 'images', 'renders')), [], 'and its render')
  ok(t, dir, ['import', built.layout, '--name', 'c'])
  ok(t, dir, ['tag', 'c', 'd'])
  t.equal(ok(t, dir, ['rm', OCI_DIGEST.slice(7, 20)]), `untagged c:latest\nuntagged d:latest\ndeleted ${OCI_DIGEST}\n`, 'by digest: every name, and the image')
  const some = podctl(dir, ['image', 'rm', 'nope', 'e'])
  t.equal(some.status, 3)
  t.match(some.stderr, /no such image: nope/)
  ok(t, dir, ['import', built.layout])
  t.equal(ok(t, dir, ['prune']), `deleted ${OCI_DIGEST}\n`, 'prune: an image with no name that no pod uses')
  t.strictSame(blobs(dir), [])
  t.equal(ok(t, dir, ['prune']), '', 'nothing left to prune')
  t.strictSame(JSON.parse(ok(t, dir, ['prune', '--format', 'json'])), { deleted: [], blobs: 0, renders: 0, leftovers: [] })
})

/** Makes a prepared pod whose manifest names image `ref` in an app, as the run side records it. */
const podUsing = (t: Test, dir: string, ref: string): string => {
  const r = podctl(dir, ['prepare', '--', '/bin/true'])
  t.equal(r.status, 0, r.stderr)
  const uuid = r.stdout.trim()
  const file = path.join(dir, 'pods', 'prepared', uuid, 'manifest')
  const m = JSON.parse(fs.readFileSync(file, 'utf8'))
  m.apps[0].image = ref
  fs.writeFileSync(file, JSON.stringify(m))
  return uuid
}

t.test('an image a pod uses: rm is refused (exit 4, naming the pod), --force takes the name only, prune keeps it until the pod is gone', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  ok(t, dir, ['import', built.layout, '--name', 'web'])
  const uuid = podUsing(t, dir, OCI_DIGEST)
  const r = podctl(dir, ['image', 'rm', 'web'])
  t.equal(r.status, 4)
  t.match(r.stderr, new RegExp(`^podctl: image web:latest is used by pod ${uuid.slice(0, 8)} \\(prepared\\)\\nremove the pod first \\(podctl rm ${uuid.slice(0, 8)}\\), or remove the name only: podctl image rm --force web:latest\\n$`))
  t.notMatch(r.stderr, STACK_RE)
  t.equal(JSON.parse(ok(t, dir, ['list', '--format', 'json'])).length, 1, 'still there')
  t.equal(ok(t, dir, ['rm', '--force', 'web']), 'untagged web:latest\n', '--force: the name only')
  t.equal(ok(t, dir, ['prune']), '', 'prune keeps an image a pod uses')
  t.match(JSON.parse(ok(t, dir, ['list', '--format', 'json'])), [{ name: null, digest: OCI_DIGEST }])
  t.equal(podctl(dir, ['rm', uuid]).status, 0)
  t.equal(ok(t, dir, ['prune']), `deleted ${OCI_DIGEST}\n`, 'then prune deletes it')
  ok(t, dir, ['import', built.layout, '--name', 'byname'])
  const p2 = podUsing(t, dir, 'byname')
  t.equal(podctl(dir, ['image', 'rm', 'byname']).status, 4, 'a pod that names the image by its name holds it too')
  t.equal(podctl(dir, ['gc', '--expire-prepared', '0s', '--mark-only']).status, 0)
  t.equal(ok(t, dir, ['rm', 'byname']), 'untagged byname:latest\n', 'a garbage pod does not hold the name: it goes, the image stays for the pod')
  t.match(JSON.parse(ok(t, dir, ['list', '--format', 'json'])), [{ name: null }], 'the image stays, unnamed')
  const gc = podctl(dir, ['gc', '--grace-period', '0s'])
  t.equal(gc.stdout, `deleted ${p2}\n`, 'gc deletes the pod')
  t.equal(ok(t, dir, ['prune']).split(' ')[0], 'deleted', 'then prune deletes the image')
})

t.test('a multi-platform index: this machine\'s platform, or --platform', async (t) => {
  const b = t.testdir({})
  const other = hostArch() === 'arm64' ? 's390x' : 'arm64'
  const mk = async (arch: string, content: string) => {
    const l = writeLayout(path.join(b, arch), { layers: [await layerTar([{ name: 'arch', content }])], config: { architecture: arch, os: 'linux', rootfs: { type: 'layers', diff_ids: [] } } })
    return l
  }
  const host = await mk(hostArch(), 'host')
  const foreign = await mk(other, 'other')
  // One layout holding both, under an image index, under index.json: skopeo's and buildah's shape.
  const layout = path.join(b, 'multi')
  fs.mkdirSync(path.join(layout, 'blobs', 'sha256'), { recursive: true })
  const desc = (l: typeof host, arch: string) => {
    for (const f of fs.readdirSync(path.join(l.layout, 'blobs', 'sha256'))) fs.copyFileSync(path.join(l.layout, 'blobs', 'sha256', f), path.join(layout, 'blobs', 'sha256', f))
    return { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: l.digest, size: fs.statSync(path.join(l.layout, 'blobs', 'sha256', l.digest.slice(7))).size, platform: { os: 'linux', architecture: arch } }
  }
  const index = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json', manifests: [desc(foreign, other), desc(host, hostArch()), { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: host.digest, size: 1, platform: { os: 'unknown', architecture: 'unknown' } }] }))
  const indexHex = (await import('node:crypto')).createHash('sha256').update(index).digest('hex')
  fs.writeFileSync(path.join(layout, 'blobs', 'sha256', indexHex), index)
  fs.writeFileSync(path.join(layout, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}')
  fs.writeFileSync(path.join(layout, 'index.json'), JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: 'application/vnd.oci.image.index.v1+json', digest: `sha256:${indexHex}`, size: index.length, annotations: { 'org.opencontainers.image.ref.name': 'multi' } }] }))
  const dir = path.join(b, 'data')
  t.equal(ok(t, dir, ['import', `oci:${layout}:multi`, '--name', 'm:host']).trim(), host.digest, "this machine's")
  t.equal(ok(t, dir, ['import', `oci:${layout}:multi`, '--name', 'm:other', '--platform', `linux/${other}`]).trim(), foreign.digest, '--platform')
  t.equal(fs.readFileSync(path.join(renderOf(dir, foreign.digest), 'arch'), 'utf8'), 'other')
  const none = podctl(dir, ['image', 'import', `oci:${layout}:multi`, '--platform', 'linux/mips64le'])
  t.equal(none.status, 3)
  t.match(none.stderr, new RegExp(`has no image for linux/mips64le\\nit has: linux/${other}, linux/${hostArch()}; choose one with --platform`))
  t.equal(podctl(dir, ['image', 'import', `oci:${layout}:multi`, '--platform', 'linux']).status, 2, 'a bad --platform')
  const tag = podctl(dir, ['image', 'import', `oci:${layout}:nosuch`])
  t.equal(tag.status, 3)
  t.match(tag.stderr, /has no image tagged "nosuch"\nit has: multi/)
})

t.test('sources that are not images: exit 2 (or 3 for a missing tag), a message, nothing kept', async (t) => {
  const b = t.testdir({ notalayout: { f: 'x' }, 'text.tar': 'hello' })
  const dir = path.join(b, 'data')
  const cases: [string[], number, RegExp, string?][] = [
    [[path.join(b, 'missing')], 2, /image source .*missing: no such file or directory/],
    [[path.join(b, 'notalayout')], 2, /is not an OCI image layout: it has no oci-layout file/],
    [['docker://alpine'], 2, /does not read the docker: transport\nto fetch from a registry: podctl image pull docker:\/\/…/],
    [[`oci-archive:${path.join(b, 'text.tar')}`], 2, /is not a readable tar archive/],
    [['-'], 2, /the archive on stdin is neither an OCI archive \(no index.json\) nor a Docker archive/, ''],
    [[`docker-archive:${OCI_ARCHIVE}`], 2, /is not a Docker archive podctl can read: it has no manifest.json/],
    [[`oci-archive:${DOCKER_ARCHIVE}`], 2, /is not an OCI archive: it has no index.json\nit is a Docker archive: docker-archive:/],
    [[`docker-archive:${DOCKER_ARCHIVE}:other:1`], 3, /has no image named other:1\nit has: docker.io\/library\/busy:1/],
    [[built.layout, '--name', 'UPPER'], 2, /invalid --name "UPPER"/],
    [[built.layout, '--max-size', 'lots'], 2, /invalid --max-size "lots"/],
  ]
  for (const [args, code, says, input] of cases) {
    const r = podctl(dir, ['image', 'import', ...args], input !== undefined ? { input } : {})
    t.equal(r.status, code, `${args.join(' ')}: exit ${code}`)
    t.match(r.stderr, says)
    t.notMatch(r.stderr, STACK_RE)
  }
  t.strictSame(JSON.parse(podctl(dir, ['image', 'list', '--format', 'json']).stdout), [])
})

t.test('pull runs skopeo (exit 1 naming the package without it)', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const r = podctl(dir, ['image', 'pull', 'docker://alpine'], { env: { ...process.env, PATH: '/nonexistent' } })
  t.equal(r.status, 1)
  t.match(r.stderr, /^podctl: skopeo is not installed: podctl image pull runs it to fetch images\ninstall the skopeo package/)
  const p = podctl(dir, ['image', 'pull', `oci-archive:${OCI_ARCHIVE}:${built.tag}`, '--name', 'pulled:1'])
  t.equal(p.status, 0, p.stderr)
  t.equal(p.stdout, `${OCI_DIGEST}\n`, 'the digest alone on stdout (skopeo is quiet without a terminal)')
  t.match(JSON.parse(podctl(dir, ['image', 'list', '--format', 'json']).stdout), [{ name: 'pulled', tag: '1', digest: OCI_DIGEST }])
  const bad = podctl(dir, ['image', 'pull', `oci:${path.join(dir, 'nothing')}:x`])
  t.equal(bad.status, 1)
  t.match(bad.stderr, /podctl: skopeo could not copy oci:.* \(it exited with 1\)/)
  t.strictSame(fs.readdirSync(path.join(dir, 'images', 'tmp')), [], 'no work dir left')
})

t.test('gc removes what killed imports left (work dirs, blobs and renders of no image), and nothing else', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  ok(t, dir, ['import', built.layout, '--name', 'kept'])
  const images = path.join(dir, 'images')
  fs.mkdirSync(path.join(images, 'tmp', 'import-1-dead-0', 'blobs'), { recursive: true })
  fs.writeFileSync(path.join(images, 'tmp', 'import-1-dead-0', 'blobs', 'x'), 'half a blob')
  fs.writeFileSync(path.join(images, 'blobs', 'sha256', 'f'.repeat(64)), 'a blob no image is made of')
  fs.mkdirSync(path.join(images, 'renders', 'e'.repeat(64), 'rootfs'), { recursive: true })
  const before = blobs(dir).filter((b) => b !== 'f'.repeat(64))
  const r = podctl(dir, ['gc'])
  t.equal(r.status, 0, r.stderr)
  t.equal(r.stdout, 'deleted image leftovers: 1 work dir, 1 blob, 1 render\n')
  t.strictSame(fs.readdirSync(path.join(images, 'tmp')), [])
  t.strictSame(blobs(dir), before, 'the image\'s blobs stay')
  t.strictSame(fs.readdirSync(path.join(images, 'renders')), [OCI_DIGEST.slice(7)], 'its render too')
  t.equal(podctl(dir, ['gc']).stdout, '', 'nothing more')
  const json = JSON.parse(podctl(dir, ['gc', '--format', 'json']).stdout)
  t.strictSame(Object.keys(json).sort(), ['deleted', 'marked', 'skipped'], 'no image_leftovers field when there were none')
  fs.mkdirSync(path.join(images, 'tmp', 'render-2-dead-0'))
  t.strictSame(JSON.parse(podctl(dir, ['gc', '--format', 'json']).stdout).image_leftovers, { work: ['render-2-dead-0'], blobs: 0, renders: 0 })
  t.equal(ok(t, dir, ['inspect', 'kept']).split('\n')[0], `digest=${OCI_DIGEST}`, 'the image is whole')
})

t.test('as a user that is not root: the image imports as that user\'s files, and an app root is a copy', async (t) => {
  if (process.getuid?.() !== 0) return void t.comment('skipped: the tests do not run as root, so they cannot make a user to run as')
  const USER = 'podctl-img'
  if (spawnSync('id', [USER]).status !== 0) {
    const r = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', USER], { encoding: 'utf8' })
    if (r.status !== 0) return void t.comment(`skipped: useradd failed: ${r.stderr.trim()}`)
  }
  const uid = Number(spawnSync('id', ['-u', USER], { encoding: 'utf8' }).stdout.trim())
  const gid = Number(spawnSync('id', ['-g', USER], { encoding: 'utf8' }).stdout.trim())
  const base = fs.mkdtempSync(path.join((await import('node:os')).tmpdir(), 'podctl-img-user-'))
  fs.chmodSync(base, 0o755)
  fs.chownSync(base, uid, gid)
  t.teardown(() => fs.rmSync(base, { recursive: true, force: true }))
  fs.copyFileSync(OCI_ARCHIVE, path.join(base, 'image.tar'))
  fs.chmodSync(path.join(base, 'image.tar'), 0o644)
  const dir = path.join(base, 'data')
  const as = { uid, gid, cwd: '/' }
  const r = podctl(dir, ['image', 'import', `oci-archive:${path.join(base, 'image.tar')}`, '--name', 'mine'], as)
  t.equal(r.status, 0, r.stderr)
  t.equal(r.stdout, `${OCI_DIGEST}\n`, 'the same image, the same digest')
  const root = renderOf(dir, OCI_DIGEST)
  t.equal(fs.readFileSync(path.join(root, 'etc/os-release'), 'utf8'), OS_RELEASE)
  const st = fs.statSync(path.join(root, 'srv/data'))
  t.strictSame([st.uid, st.gid, st.mode & 0o777], [uid, gid, 0o640], 'owned by the user (the runtime maps them to the pod\'s root), modes as in the image')
  // The runtime's calls, as that user: no overlay can be mounted, so the app's root is a copy.
  const script = `
    const { ensureRender } = await import(${JSON.stringify(path.resolve('dist/lib/image/render.js'))})
    const { prepareAppRoot } = await import(${JSON.stringify(path.resolve('dist/lib/image/app-root.js'))})
    const fs = await import('node:fs')
    const render = await ensureRender(${JSON.stringify(dir)}, ${JSON.stringify(OCI_DIGEST)})
    fs.mkdirSync(${JSON.stringify(path.join(base, 'app'))})
    console.log(JSON.stringify(prepareAppRoot(render, ${JSON.stringify(path.join(base, 'app'))})))`
  const p = spawnSync('/usr/bin/env', ['-u', 'NODE_OPTIONS', process.execPath, '--input-type=module', '-e', script], { encoding: 'utf8', uid, gid, cwd: '/' })
  t.equal(p.status, 0, p.stderr)
  t.strictSame(JSON.parse(p.stdout), { kind: 'copy', rootfs: path.join(base, 'app', 'rootfs') })
  t.equal(fs.readFileSync(path.join(base, 'app', 'rootfs', 'etc/os-release'), 'utf8'), OS_RELEASE)
})
