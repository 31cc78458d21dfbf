// Hostile images (CONTRACT §13): layers written by hand to do what the
// tar-slip class of bugs did (CVE-2019-14271, CVE-2018-15664, runc's
// CVE-2019-5736 family): absolute names, "..", writing, deleting or
// linking through a symbolic link an earlier entry or layer planted,
// devices and setuid files as a user, blobs that lie about their digest,
// layers past --max-size or past the disk. Each one is refused with exit
// 2, a message naming the entry and the image, no stack trace, nothing
// written outside the render (the host is looked at afterwards), and no
// image, render or work dir left behind.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { podctl, type RunOptions } from '../helpers/cli-util.js'
import { STACK_RE, type Test } from '../helpers/common.js'
import { layerTar, randomBytes, writeLayout, type Entry, type HandImage } from '../helpers/images.js'

interface Case {
  /** The image's layers, each a list of entries (a function of the host dir the image tries to reach). */
  layers: (host: string) => Entry[][]
  /** What stderr must say (after "podctl: "). */
  says: RegExp
  args?: string[]
  image?: Partial<HandImage>
  /** Run podctl as this user (a data dir of theirs). */
  as?: RunOptions
}

/** A host directory outside the data dir with a file to steal and one to delete: an image must reach neither. */
const makeHost = (base: string): string => {
  const host = path.join(base, 'host')
  fs.mkdirSync(host, { mode: 0o755 })
  fs.writeFileSync(path.join(host, 'secret'), 'secret\n')
  fs.writeFileSync(path.join(host, 'victim'), 'victim\n')
  return host
}

const hostUntouched = (t: Test, host: string): void => {
  t.strictSame(fs.readdirSync(host).sort(), ['secret', 'victim'], 'nothing appeared in or went from the host dir')
  t.equal(fs.readFileSync(path.join(host, 'secret'), 'utf8'), 'secret\n', 'the host file is unchanged')
  t.equal(fs.statSync(path.join(host, 'secret')).nlink, 1, 'and nothing links to it')
  t.equal(fs.readFileSync(path.join(host, 'victim'), 'utf8'), 'victim\n')
}

/** Nothing of the image is left: no name, no record, no render, no work dir, no blob. */
const nothingKept = (t: Test, dir: string, as?: RunOptions): void => {
  const list = podctl(dir, ['image', 'list', '--format', 'json'], as)
  t.equal(list.status, 0, list.stderr)
  t.strictSame(JSON.parse(list.stdout), [], 'image list shows nothing')
  const images = path.join(dir, 'images')
  if (!fs.existsSync(images)) return
  t.strictSame(fs.readdirSync(path.join(images, 'renders')), [], 'no render')
  t.strictSame(fs.readdirSync(path.join(images, 'tmp')), [], 'no work dir')
  t.strictSame(fs.readdirSync(path.join(images, 'blobs', 'sha256')), [], 'no blob')
}

const base = (t: Test, as?: RunOptions): string => {
  if (as === undefined) return t.testdir({})
  const b = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-img-'))
  fs.chmodSync(b, 0o755)
  fs.chownSync(b, as.uid!, as.gid!)
  t.teardown(() => fs.rmSync(b, { recursive: true, force: true }))
  return b
}

const refused = async (t: Test, c: Case): Promise<void> => {
  const b = base(t, c.as)
  const host = makeHost(b)
  const layers = await Promise.all(c.layers(host).map(layerTar))
  const { layout } = writeLayout(b, { layers, ...c.image })
  const dir = path.join(b, 'data')
  const r = podctl(dir, ['image', 'import', `oci:${layout}`, '--name', 'evil', ...(c.args ?? [])], c.as)
  t.equal(r.status, 2, 'exit 2')
  t.match(r.stderr, /^podctl: /)
  t.match(r.stderr, c.says)
  t.notMatch(r.stderr, STACK_RE, 'no stack trace')
  t.equal(r.stdout, '', 'no digest printed')
  hostUntouched(t, host)
  nothingKept(t, dir, c.as)
}

const ENTRY = (layer: string, entry: string): RegExp => new RegExp(`image evil:latest is refused: layer ${layer} \\(sha256:[0-9a-f]{12}…\\), entry "${entry}": `)

t.test('absolute paths', async (t) => {
  await refused(t, { layers: (host) => [[{ name: 'ok', content: 'ok' }, { name: `${host}/pwned`, content: 'x' }]], says: /is absolute/ })
  await refused(t, { layers: () => [[{ name: '/etc/pwned', content: 'x' }]], says: /layer 1 of 1 .*entry "\/etc\/pwned": its path is absolute/ })
})

t.test('".." in a path', async (t) => {
  await refused(t, { layers: (host) => [[{ name: `../../../../../../../../../..${host}/pwned`, content: 'x' }]], says: /contains "\.\."/ })
  await refused(t, { layers: () => [[{ name: 'a/', type: 'directory' }, { name: 'a/../../pwned', content: 'x' }]], says: /entry "a\/\.\.\/\.\.\/pwned": its path contains "\.\."/ })
})

t.test('a file written through a symlink planted by an earlier entry', async (t) => {
  await refused(t, {
    layers: (host) => [[{ name: 'evil', type: 'symlink', linkname: host }, { name: 'evil/pwned', content: 'x' }]],
    says: /entry "evil\/pwned": it is written through the symbolic link "evil" \(to ".*host"\), which an earlier entry made/,
  })
})

t.test('a file written through a symlink planted by an earlier layer (CVE-2019-14271 style)', async (t) => {
  await refused(t, {
    layers: (host) => [[{ name: 'evil', type: 'symlink', linkname: host }], [{ name: 'evil/pwned', content: 'x' }]],
    says: ENTRY('2 of 2', 'evil/pwned'),
  })
})

t.test('a relative symlink that climbs out, then written through', async (t) => {
  await refused(t, {
    layers: (host) => [[{ name: 'a/', type: 'directory' }, { name: 'a/up', type: 'symlink', linkname: `../../../../../../../../../..${host}` }, { name: 'a/up/pwned', content: 'x' }]],
    says: /written through the symbolic link "a\/up"/,
  })
})

t.test('a symlink to a directory inside the image is not followed either', async (t) => {
  await refused(t, {
    layers: () => [[{ name: 'real/', type: 'directory' }, { name: 'alias', type: 'symlink', linkname: 'real' }, { name: 'alias/file', content: 'x' }]],
    says: /written through the symbolic link "alias" \(to "real"\)/,
  })
})

t.test('a directory made through a symlink', async (t) => {
  await refused(t, { layers: (host) => [[{ name: 'evil', type: 'symlink', linkname: host }], [{ name: 'evil/sub/', type: 'directory' }]], says: /written through the symbolic link "evil"/ })
})

t.test('a whiteout through a symlink deletes nothing outside', async (t) => {
  await refused(t, { layers: (host) => [[{ name: 'evil', type: 'symlink', linkname: host }], [{ name: 'evil/.wh.victim' }]], says: /entry "evil\/\.wh\.victim": it is written through the symbolic link "evil"/ })
})

t.test('an opaque whiteout through a symlink empties nothing outside', async (t) => {
  await refused(t, { layers: (host) => [[{ name: 'evil', type: 'symlink', linkname: host }], [{ name: 'evil/.wh..wh..opq' }]], says: /written through the symbolic link "evil"/ })
})

t.test('hard links to outside the image', async (t) => {
  await refused(t, { layers: (host) => [[{ name: 'x', type: 'link', linkname: `${host}/secret` }]], says: /entry "x": its link target is absolute/ })
  await refused(t, { layers: () => [[{ name: 'x', type: 'link', linkname: '../../../../../../host/secret' }]], says: /its link target contains "\.\."/ })
})

t.test('a hard link through a planted symlink (CVE-2018-15664 style)', async (t) => {
  await refused(t, {
    layers: (host) => [[{ name: 'evil', type: 'symlink', linkname: host }, { name: 'x', type: 'link', linkname: 'evil/secret' }]],
    says: /entry "x": it is a hard link to "evil\/secret", whose way passes a symbolic link or a file/,
  })
})

t.test('a hard link to nothing, or to a directory', async (t) => {
  await refused(t, { layers: () => [[{ name: 'x', type: 'link', linkname: 'missing' }]], says: /it is a hard link to "missing", which is not in the image/ })
  await refused(t, { layers: () => [[{ name: 'd/', type: 'directory' }, { name: 'x', type: 'link', linkname: 'd' }]], says: /it is a hard link to the directory "d"/ })
})

t.test('an entry that would replace the root', async (t) => {
  await refused(t, { layers: () => [[{ name: './', type: 'symlink', linkname: '/' }]], says: /it would replace the root directory/ })
})

t.test('a blob that does not match its digest', async (t) => {
  await refused(t, { layers: () => [[{ name: 'f', content: 'content' }]], image: { tamper: true }, says: /layer 1 \(sha256:[0-9a-f]{64}\) of oci:.* does not match its digest: its content hashes to sha256:/ })
})

t.test('a layer that is not what the config says it unpacks to (diff_id)', async (t) => {
  await refused(t, { layers: () => [[{ name: 'f', content: 'content' }]], image: { diffIds: [`sha256:${'0'.repeat(64)}`] }, says: /it unpacks to sha256:[0-9a-f]{12}…, not to sha256:000000000000… as the image config says/ })
})

t.test('a layer past --max-size', async (t) => {
  // Not compressed, the layer's blob is as large as what it unpacks to: staging it is refused first, naming the blob.
  await refused(t, { layers: () => [[{ name: 'small', content: 'x' }, { name: 'big', content: randomBytes(3 * 1024 * 1024) }]], args: ['--max-size', '1M'], says: /image evil:latest is refused: oci:.*, entry "blobs\/sha256\/[0-9a-f]{64}": the image stages past --max-size \(1048576 bytes\)/ })
  // Compressed, it stages in a few KiB, and unpacking stops at the entry that goes past.
  await refused(t, { layers: () => [[{ name: 'small', content: 'x' }, { name: 'big', content: Buffer.alloc(3 * 1024 * 1024) }]], image: { gzip: true }, args: ['--max-size', '2Mi'], says: /entry "big": the image unpacks past --max-size \(2097152 bytes\)/ })
})

t.test('a layer that is not a tar, and a layer media type podctl does not know', async (t) => {
  await refused(t, {
    layers: () => [[{ name: 'f', content: 'x' }]],
    image: {
      manifest: (m) => {
        const layers = m.layers as { mediaType: string }[]
        layers[0]!.mediaType = 'application/vnd.oci.image.layer.v1.tar+gzip'
        return m
      },
    },
    says: /the layer is not a readable tar stream/,
  })
  await refused(t, {
    layers: () => [[{ name: 'f', content: 'x' }]],
    image: {
      manifest: (m) => {
        ;(m.layers as { mediaType: string }[])[0]!.mediaType = 'application/x-rar'
        return m
      },
    },
    says: /layer media type "application\/x-rar" of layer 1 .* is not supported/,
  })
})

t.test('a manifest over 4 MiB', async (t) => {
  await refused(t, { layers: () => [[{ name: 'f', content: 'x' }]], image: { manifest: (m) => ({ ...m, annotations: { pad: 'x'.repeat(4 * 1024 * 1024) } }) }, says: /image manifest sha256:.* is larger than 4 MiB/ })
})

/** The unprivileged user of the non-root cases, made if missing; or why there is none. */
const TEST_USER = 'podctl-img'
const unprivileged = (): RunOptions | string => {
  if (process.getuid?.() !== 0) return 'the tests do not run as root, so they cannot make a user to run as'
  if (spawnSync('id', [TEST_USER]).status !== 0) {
    const r = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', TEST_USER], { encoding: 'utf8' })
    if (r.error || r.status !== 0) return `useradd ${TEST_USER} failed: ${r.error?.message ?? r.stderr.trim()}`
  }
  const id = (flag: string): number => Number(spawnSync('id', [flag, TEST_USER], { encoding: 'utf8' }).stdout.trim())
  return { uid: id('-u'), gid: id('-g'), cwd: '/' }
}

t.test('as a user that is not root: device nodes and setuid or setgid files are refused', async (t) => {
  const as = unprivileged()
  if (typeof as === 'string') {
    t.comment(`skipped: ${as}`)
    return
  }
  await refused(t, { as, layers: () => [[{ name: 'dev/', type: 'directory' }, { name: 'dev/sda', type: 'block-device', devmajor: 8, devminor: 0, mode: 0o666 }]], says: /entry "dev\/sda": it is a device node \(block-device 8:0\), which podctl imports only as root/ })
  await refused(t, { as, layers: () => [[{ name: 'dev/', type: 'directory' }, { name: 'dev/mem', type: 'character-device', devmajor: 1, devminor: 1 }]], says: /it is a device node/ })
  await refused(t, { as, layers: () => [[{ name: 'bin/', type: 'directory' }, { name: 'bin/su', content: 'x', mode: 0o4755 }]], says: /entry "bin\/su": it is a setuid file \(mode 4755\), which podctl imports only as root/ })
  await refused(t, { as, layers: () => [[{ name: 'bin/', type: 'directory' }, { name: 'bin/wall', content: 'x', mode: 0o2755 }]], says: /it is a setgid file \(mode 2755\)/ })
})

t.test('past the disk: a clean message, exit 2, nothing kept', async (t) => {
  if (process.getuid?.() !== 0) {
    t.comment('skipped: mounting a small tmpfs needs root')
    return
  }
  // Not a t.testdir: tap would remove it before the tmpfs in it is unmounted.
  const b = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-enospc-'))
  const host = makeHost(b)
  const dir = path.join(b, 'data')
  fs.mkdirSync(dir, { mode: 0o750 })
  const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=6m,mode=0750', 'tmpfs', dir], { encoding: 'utf8' })
  if (m.status !== 0) {
    t.comment(`skipped: cannot mount a tmpfs: ${m.stderr.trim()}`)
    return
  }
  t.teardown(() => {
    spawnSync('umount', ['-l', dir])
    fs.rmSync(b, { recursive: true, force: true })
  })
  // Compressed, the layer fits; unpacked, it does not.
  const { layout } = writeLayout(b, { layers: [await layerTar([{ name: 'big', content: Buffer.alloc(16 * 1024 * 1024) }])], gzip: true })
  const r = podctl(dir, ['image', 'import', `oci:${layout}`, '--name', 'evil'])
  t.equal(r.status, 2, r.stderr)
  t.match(r.stderr, /image evil:latest is refused: layer 1 of 1 \(sha256:[0-9a-f]{12}…\), entry "big": no space left on the device \(ENOSPC\) to unpack it/)
  t.match(r.stderr, /free some space/)
  t.notMatch(r.stderr, STACK_RE)
  hostUntouched(t, host)
  nothingKept(t, dir)
})
