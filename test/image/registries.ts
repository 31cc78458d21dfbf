// containers-registries.conf(5) as podman reads it (lib/image/registries.ts):
// the user's file in place of the system's, drop-ins in name order, aliases
// merged, version 1's search list, and a file that is not TOML.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { readRegistriesConf } from '../../lib/image/registries.js'

const home = (files: Record<string, string>): string => {
  const h = t.testdir({})
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(h, rel)), { recursive: true })
    fs.writeFileSync(path.join(h, rel), text)
  }
  return h
}

t.test("the user's registries.conf and drop-ins", async (t) => {
  const h = home({
    '.config/containers/registries.conf': 'unqualified-search-registries = ["quay.io"]\n[aliases]\n"a" = "quay.io/a"\n"b" = "quay.io/b"\n',
    '.config/containers/registries.conf.d/20-b.conf': '[aliases]\n"b" = "example.com/b"\n',
    '.config/containers/registries.conf.d/10-c.conf': 'unqualified-search-registries = ["docker.io", "quay.io"]\n[aliases]\n"c" = "example.com/c"\n',
    '.config/containers/registries.conf.d/ignored.txt': 'not = [toml',
  })
  const c = readRegistriesConf({ HOME: h })
  t.equal(c.file, path.join(h, '.config/containers/registries.conf'))
  t.strictSame(c.search, ['docker.io', 'quay.io'], 'a drop-in replaces the search list')
  t.strictSame(Object.fromEntries(c.aliases), { a: 'quay.io/a', b: 'example.com/b', c: 'example.com/c' }, 'aliases merged, later files winning')
})

t.test('CONTAINERS_REGISTRIES_CONF, version 1, and a file that is not TOML', async (t) => {
  const h = home({ 'v1.conf': '[registries.search]\nregistries = ["registry.example.com"]\n', 'bad.conf': 'unqualified-search-registries = [' })
  const empty = t.testdir({})
  const c = readRegistriesConf({ HOME: empty, CONTAINERS_REGISTRIES_CONF: path.join(h, 'v1.conf') })
  t.strictSame(c.search, ['registry.example.com'])
  t.equal(c.file, path.join(h, 'v1.conf'))
  t.throws(() => readRegistriesConf({ HOME: empty, CONTAINERS_REGISTRIES_CONF: path.join(h, 'bad.conf') }), { code: 'EFAILED', message: new RegExp(`^cannot read ${h}/bad\\.conf: `) })
  t.strictSame(readRegistriesConf({ HOME: empty, CONTAINERS_REGISTRIES_CONF: path.join(h, 'missing.conf') }).search, [], 'a missing file is nothing')
})
