// How images are named and found (CONTRACT sections 13 and 15), black box,
// held against what podman 4.3.1 does with the same names here: short
// names resolve as podman resolves local images (aliases, localhost/, the
// unqualified-search registries, docker.io), a name ending in one, the
// image ID podman shows (the config digest) as well as the digest, what a
// name that is not there says, skopeo's docker-archive:FILE:NAME, image
// pull of a short name (from a registry on 127.0.0.1), times in
// milliseconds, --max-size of an image already stored, a whiteout of "..".
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { podctl, podctlAsync, type Result } from '../helpers/cli-util.js'
import { STACK_RE, TIME_RE, type Test } from '../helpers/common.js'
import { layerTar, missingTools, randomBytes, serveLayout, skopeoCopy, writeLayout, type HandImage } from '../helpers/images.js'

const missing = missingTools()
if (missing !== undefined) {
  t.comment(`skipped: ${missing}`)
  process.exit(0)
}

const fixtures = t.testdir({})

/** A home whose registries.conf is the test's alone (podman reads no system drop-in when the user has one). */
const homeWith = (conf: string): string => {
  const home = fs.mkdtempSync(path.join(fixtures, 'home-'))
  fs.mkdirSync(path.join(home, '.config', 'containers'), { recursive: true })
  fs.writeFileSync(path.join(home, '.config', 'containers', 'registries.conf'), conf)
  return home
}
/** Like Debian's shortnames.conf for the names used here, and no search registry (as /etc/containers/registries.conf here). */
const HOME = homeWith('[aliases]\n"busybox" = "docker.io/library/busybox"\n"alpine" = "docker.io/library/alpine"\n')
const env = (home = HOME): NodeJS.ProcessEnv => ({ ...process.env, HOME: home })

const image = async (tag: string, over: Partial<HandImage> = {}): Promise<{ layout: string; digest: string; config: string }> => {
  const dir = fs.mkdtempSync(path.join(fixtures, 'img-'))
  const l = writeLayout(dir, { layers: [await layerTar([{ name: 'etc/', type: 'directory' }, { name: 'etc/which', content: tag }])], tag, ...over })
  const manifest = JSON.parse(fs.readFileSync(path.join(l.layout, 'blobs', 'sha256', l.digest.slice(7)), 'utf8')) as { config: { digest: string } }
  return { layout: l.layout, digest: l.digest, config: manifest.config.digest }
}

const ok = (t: Test, dir: string, args: string[], home = HOME): string => {
  const r = podctl(dir, args, { env: env(home) })
  t.equal(r.status, 0, `${args.join(' ')}: exit 0`, { stderr: r.stderr })
  return r.stdout
}
const fails = (dir: string, args: string[], home = HOME): Result => podctl(dir, args, { env: env(home) })
const digestOf = (t: Test, dir: string, text: string): string | undefined => {
  const r = fails(dir, ['image', 'inspect', text, '--format', 'json'])
  return r.status === 0 ? (JSON.parse(r.stdout).digest as string) : `exit ${r.status}: ${r.stderr.split('\n')[0]}`
}

// Names of `podman images` in the side-by-side run (each a different image), and what `podman image inspect NAME` found
// there (test/image/find.ts has the rest of podman's order, without processes).
const STORED = ['docker.io/library/busybox:1.36', 'docker.io/trial/box:1.0', 'localhost/busybox:latest', 'docker.io/library/busybox:latest', 'localhost/trial/box:1.0', 'quay.io/other/tool:2']
const FOUND: [typed: string, stored: string][] = [
  ['busybox:1.36', 'docker.io/library/busybox:1.36'],
  ['busybox', 'docker.io/library/busybox:latest'], // the alias before localhost/
  ['trial/box:1.0', 'localhost/trial/box:1.0'], // localhost/ before docker.io
  ['library/busybox:1.36', 'docker.io/library/busybox:1.36'],
  ['tool:2', 'quay.io/other/tool:2'], // the end of a stored name
  ['docker.io/busybox:1.36', 'docker.io/library/busybox:1.36'],
  ['localhost/busybox', 'localhost/busybox:latest'],
]

t.test('short names resolve as podman resolves local images', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const digests = new Map<string, string>()
  for (const name of STORED) {
    const img = await image(name)
    digests.set(name, ok(t, dir, ['image', 'import', `oci:${img.layout}`, '--name', name]).trim())
  }
  for (const [typed, stored] of FOUND) t.equal(digestOf(t, dir, typed), digests.get(stored), `${typed} is ${stored}`)
  // Without the alias and without docker.io's, busybox is localhost/busybox (podman: the same).
  const d2 = path.join(t.testdir({}), 'data')
  const local = (await image('local')).layout
  const want = ok(t, d2, ['image', 'import', `oci:${local}`, '--name', 'localhost/busybox']).trim()
  t.equal(digestOf(t, d2, 'busybox'), want, 'busybox is localhost/busybox when that is all there is')
  t.match(ok(t, d2, ['image', 'inspect', 'busybox']), /^name=localhost\/busybox:latest$/m)
  // A name stored as it was given (--name, a RepoTag of an old docker save) is found by the name podman would have stored.
  ok(t, d2, ['image', 'tag', 'busybox', 'box:2'])
  t.equal(digestOf(t, d2, 'docker.io/library/box:2'), want, 'box:2 stored short is docker.io/library/box:2')
})

t.test('a name that ends several names is refused, listing them (podman takes the first it happens upon)', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  for (const name of ['docker.io/trial/box:1.0', 'quay.io/x/box:1.0']) ok(t, dir, ['image', 'import', `oci:${(await image(name)).layout}`, '--name', name])
  const r = fails(dir, ['image', 'inspect', 'box:1.0'])
  t.equal(r.status, 3)
  t.equal(r.stderr, 'podctl: box:1.0 is ambiguous: it ends the names of 2 images (docker.io/trial/box:1.0, quay.io/x/box:1.0)\ngive the whole name\n')
})

t.test('a name without the tag asked for lists the tags there are; a prefix under 12 digits says it needs 12', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const img = await image('alpine:3')
  ok(t, dir, ['image', 'import', `oci:${img.layout}`, '--name', 'docker.io/library/alpine:3'])
  ok(t, dir, ['image', 'tag', 'alpine:3', 'alpine:3.20'])
  const r = fails(dir, ['image', 'inspect', 'alpine'])
  t.equal(r.status, 3)
  t.equal(r.stderr, 'podctl: no such image: alpine (no tag latest of it is stored)\nthe tags there are: alpine:3.20, docker.io/library/alpine:3; name one, e.g. alpine:3.20\n')
  const rm = fails(dir, ['image', 'rm', 'alpine:edge'])
  t.equal(rm.status, 3)
  t.match(rm.stderr, /^podctl: no such image: alpine:edge \(no tag edge of it is stored\)\nthe tags there are: alpine:3\.20, docker\.io\/library\/alpine:3; name one, e\.g\. alpine:3\.20\n/)
  const short = fails(dir, ['image', 'inspect', img.digest.slice(7, 13)])
  t.equal(short.status, 3)
  t.equal(short.stderr, `podctl: no such image: ${img.digest.slice(7, 13)} (a prefix of an image's digest or ID names it only with 12 or more hex digits)\nsee the images there are, and their digests: podctl image list\n`)
  t.notMatch(short.stderr, STACK_RE)
})

t.test("the image ID podman shows (the config's digest) names the image, whole or by 12 or more digits, as the digest does", async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const img = await image('id')
  ok(t, dir, ['image', 'import', `oci:${img.layout}`, '--name', 'id:1'])
  for (const text of [img.config, img.config.slice(7), img.config.slice(7, 19), `sha256:${img.config.slice(7, 21)}`, img.digest, img.digest.slice(7, 19)]) {
    t.equal(digestOf(t, dir, text), img.digest, text)
  }
  // A digest names no app: the app is "app", however many of its digits are given.
  for (const text of [img.digest.slice(7, 19), img.digest.slice(7), img.digest]) {
    const uuid = ok(t, dir, ['prepare', '--image', text, '--', 'true']).trim()
    t.equal(JSON.parse(ok(t, dir, ['status', uuid, '--format', 'json'])).apps[0].name, 'app', `--image ${text}: the app is named app`)
    ok(t, dir, ['rm', uuid])
  }
  ok(t, dir, ['image', 'tag', img.config.slice(7, 19), 'id:2'])
  t.match(ok(t, dir, ['image', 'rm', img.config.slice(7, 19)]), /untagged id:1\nuntagged id:2\ndeleted sha256:/, 'rm by its ID')
})

t.test("skopeo's docker-archive:FILE:NAME[:TAG] names a RepoTag as docker reads names", async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const a = await image('a')
  const tar = path.join(t.testdir({}), 'two.tar')
  skopeoCopy(`oci:${a.layout}:a`, `docker-archive:${tar}:trial/box:1.0`) // RepoTags: docker.io/trial/box:1.0
  const solo = ok(t, dir, ['image', 'import', `docker-archive:${tar}:trial/box:1.0`]).trim()
  t.match(solo, /^sha256:[0-9a-f]{64}$/)
  t.match(ok(t, dir, ['image', 'inspect', 'trial/box:1.0']), /^name=docker\.io\/trial\/box:1\.0$/m, 'named by its RepoTag')
  t.equal(fails(dir, ['image', 'import', `docker-archive:${tar}:docker.io/trial/box:1.0`]).status, 0, 'the whole name too')
  const other = fails(dir, ['image', 'import', `docker-archive:${tar}:trial/box:2`])
  t.equal(other.status, 3)
  t.match(other.stderr, /has no image named trial\/box:2\nit has: docker\.io\/trial\/box:1\.0/)
})

t.test('image pull of a short name: its alias, else each unqualified-search registry in turn, else podman\'s refusal', async (t) => {
  const img = await image('v1', { tag: '1.0', gzip: true }) // compressed, as a registry's: skopeo copies it as it is
  const registry = await serveLayout(t, img.layout)
  // The registry answers in this process: podctl runs beside it, never blocking it.
  const pull = (dir: string, ref: string, home: string): Promise<Result> => podctlAsync(t, dir, ['image', 'pull', ref], { env: env(home) })
  const insecure = `[[registry]]\nlocation = "${registry}"\ninsecure = true\n`
  const dir = path.join(t.testdir({}), 'data')
  const aliased = homeWith(`${insecure}[aliases]\n"trial/box" = "${registry}/trial/box"\n`)
  const a = await pull(dir, 'trial/box:1.0', aliased)
  t.equal(a.status, 0, 'through the alias', { stderr: a.stderr })
  t.equal(a.stdout.trim(), img.digest)
  t.match(ok(t, dir, ['image', 'list', '--format', 'json'], aliased), new RegExp(`"name":"${registry}/trial/box","tag":"1.0"`), 'named by the name it resolved to')
  const searched = homeWith(`unqualified-search-registries = ["127.0.0.1:1", "${registry}"]\n${insecure}`)
  const d2 = path.join(t.testdir({}), 'data')
  const r = await pull(d2, 'box:1.0', searched)
  t.equal(r.status, 0, 'the second search registry has it', { stderr: r.stderr })
  t.equal(r.stdout.trim(), img.digest)
  t.match(ok(t, d2, ['image', 'inspect', 'box:1.0'], searched), new RegExp(`^name=${registry}/box:1\\.0$`, 'm'))
  const none = homeWith('')
  const refused = await pull(path.join(t.testdir({}), 'data'), 'busybox', none)
  t.equal(refused.status, 2)
  t.equal(refused.stderr, `podctl: short name "busybox" did not resolve to an alias and no unqualified-search registries are defined in ${none}/.config/containers/registries.conf\ngive the whole name (docker.io/library/busybox), or set unqualified-search-registries or an alias there (containers-registries.conf(5))\n`)
})

t.test('times in the JSON of list and inspect are RFC 3339 UTC with milliseconds, whatever the config says', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const img = await image('t', { config: { architecture: 'amd64', os: 'linux', created: '2024-01-02T03:04:05.123456789+02:00', config: {} } })
  ok(t, dir, ['image', 'import', `oci:${img.layout}`, '--name', 't'])
  const [row] = JSON.parse(ok(t, dir, ['image', 'list', '--format', 'json'])) as { created: string }[]
  t.equal(row!.created, '2024-01-02T01:04:05.123Z')
  const inspect = JSON.parse(ok(t, dir, ['image', 'inspect', 't', '--format', 'json'])) as { created: string; imported_at: string }
  t.equal(inspect.created, '2024-01-02T01:04:05.123Z')
  t.match(inspect.imported_at, TIME_RE)
})

t.test('--max-size holds for an image the store has already', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const img = await image('big', { layers: [await layerTar([{ name: 'big', content: randomBytes(2 * 1024 * 1024) }])], gzip: true })
  const digest = ok(t, dir, ['image', 'import', `oci:${img.layout}`, '--name', 'big:1']).trim()
  const r = fails(dir, ['image', 'import', `oci:${img.layout}`, '--name', 'big:2', '--max-size', '1M'])
  t.equal(r.status, 2, { stderr: r.stderr })
  t.match(r.stderr, /^podctl: image big:2 is refused: it unpacks to \d+ bytes, past --max-size \(1048576 bytes\)\nthe store has it from an earlier import/)
  t.strictSame(JSON.parse(ok(t, dir, ['image', 'list', '--format', 'json'])).map((i: { name: string; tag: string }) => `${i.name}:${i.tag}`), ['big:1'], 'no new name')
  t.equal(ok(t, dir, ['image', 'import', `oci:${img.layout}`, '--name', 'big:2', '--max-size', '3M']).trim(), digest, 'under it, it is named')
})

t.test('a whiteout of ".." or "." is refused as hostile, naming the entry', async (t) => {
  for (const [entry, name] of [['a/.wh...', '..'], ['a/.wh..', '.'], ['.wh.', '']] as const) {
    const dir = path.join(t.testdir({}), 'data')
    const img = await image('w', { layers: [await layerTar([{ name: 'a/', type: 'directory' }, { name: 'a/f', content: 'x' }]), await layerTar([{ name: 'a/', type: 'directory' }, { name: entry }])] })
    const r = fails(dir, ['image', 'import', `oci:${img.layout}`, '--name', 'evil'])
    t.equal(r.status, 2, entry)
    t.match(r.stderr, `podctl: image evil:latest is refused: layer 2 of 2 (sha256:`)
    t.match(r.stderr, `entry ${JSON.stringify(entry)}: it is a whiteout of ${JSON.stringify(name)}, which names no entry of its directory`)
    t.notMatch(r.stderr, /bug:|not a readable tar stream/)
  }
})
