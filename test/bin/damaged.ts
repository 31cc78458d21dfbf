// CONTRACT §10, damaged pods: a pod whose files are missing, unreadable or
// invalid is still listed (state from its directory, a `damaged` reason),
// removable with rm and collected by gc, and one damaged pod never changes
// the answer for the others. Then the same as a property: random damage to
// random files of random pods.
import t from 'tap'
import fc from 'fast-check'
import fs from 'node:fs'
import path from 'node:path'
import { STACK_RE, runsOf } from '../helpers/common.js'
import { exitedPod, podctl, preparedPod } from '../helpers/cli-util.js'

type Damage = 'truncate' | 'garbage' | 'directory' | 'symlink' | 'empty' | 'apps-null' | 'no-pid' | 'remove'

/** Damages `file` in a way a crash, a full disk or a person could. */
const damage = (file: string, how: Damage, outside: string): void => {
  const text = fs.existsSync(file) && fs.lstatSync(file).isFile() ? fs.readFileSync(file, 'utf8') : '{}'
  fs.rmSync(file, { recursive: true, force: true })
  switch (how) {
    case 'truncate':
      return fs.writeFileSync(file, text.slice(0, Math.floor(text.length / 2)))
    case 'garbage':
      return fs.writeFileSync(file, '\u0000\u00ff not json {')
    case 'directory':
      return void fs.mkdirSync(path.join(file, 'inside'), { recursive: true })
    case 'symlink':
      return fs.symlinkSync(outside, file)
    case 'empty':
      return fs.writeFileSync(file, '')
    case 'apps-null':
      return fs.writeFileSync(file, '{"apps":[null]}')
    case 'no-pid': {
      const o = JSON.parse(text) as Record<string, unknown>
      delete o.pid
      return fs.writeFileSync(file, JSON.stringify(o))
    }
    case 'remove':
      return
  }
}

const where = (dir: string, uuid: string): string => {
  for (const d of fs.readdirSync(path.join(dir, 'pods'))) if (fs.existsSync(path.join(dir, 'pods', d, uuid))) return path.join(dir, 'pods', d, uuid)
  throw new Error(`no pod ${uuid}`)
}

const listJson = (dir: string): Record<string, Record<string, unknown>> => {
  const r = podctl(dir, ['list', '--format', 'json'])
  if (r.status !== 0) throw new Error(`list: exit ${r.status}: ${r.stderr}`)
  return Object.fromEntries((JSON.parse(r.stdout) as Record<string, unknown>[]).map((p) => [p.uuid as string, p]))
}

t.test('each kind of damage to pod.json: listed, shown, removable, collectable; the others untouched', async (t) => {
  for (const how of ['truncate', 'garbage', 'directory', 'symlink', 'empty', 'apps-null', 'no-pid', 'remove'] as const) {
    await t.test(how, async (t) => {
      const dir = path.join(t.testdir({ outside: 'root:x:0:0:root:/root:/bin/sh\n' }), 'data')
      const outside = path.join(path.dirname(dir), 'outside')
      const healthy = [await exitedPod(dir), await preparedPod(dir)]
      const sick = await exitedPod(dir)
      const before = listJson(dir)
      damage(path.join(where(dir, sick), 'pod.json'), how, outside)
      const after = listJson(dir)
      for (const h of healthy) t.strictSame(after[h], before[h], 'a healthy pod reads the same')
      t.equal(after[sick]?.state, 'exited', 'the damaged pod keeps the state of its directory')
      t.type(after[sick]?.damaged, 'string', 'and says why it is damaged')
      t.notMatch(JSON.stringify(after), /undefined/)
      const table = podctl(dir, ['list'])
      t.equal(table.status, 0)
      t.notMatch(table.stdout, /undefined/)
      const status = podctl(dir, ['status', sick])
      t.equal(status.status, 0, 'status of the damaged pod: exit 0')
      t.match(status.stdout, /^state=exited\ndamaged=\S/, 'status says so')
      t.notMatch(status.stdout, /undefined/)
      t.equal(fs.readFileSync(outside, 'utf8'), 'root:x:0:0:root:/root:/bin/sh\n', 'nothing was written through a link')
      const gc = podctl(dir, ['gc', '--grace-period', '0s'])
      t.equal(gc.status, 0, `gc: exit 0 (${gc.stderr.trim()})`)
      t.match(gc.stdout, new RegExp(`^deleted ${sick}$`, 'm'), 'gc collected it')
      t.notMatch(gc.stderr, STACK_RE)
      t.equal(fs.readFileSync(outside, 'utf8'), 'root:x:0:0:root:/root:/bin/sh\n', 'nor deleted through one')
    })
  }
})

t.test('rm removes a damaged pod; a damaged manifest shows in status', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const a = await exitedPod(dir)
  const b = await preparedPod(dir)
  damage(path.join(where(dir, a), 'pod.json'), 'directory', '/')
  damage(path.join(where(dir, b), 'manifest'), 'garbage', '/')
  const status = podctl(dir, ['status', b])
  t.equal(status.status, 0)
  t.match(status.stdout, /^damaged=pod \S+ has a damaged manifest/m)
  // A parser's message quotes the bytes it choked on: they stay one printable line.
  fs.writeFileSync(path.join(where(dir, b), 'manifest'), 'xx\n\x1b[31mgarbage')
  const quoted = podctl(dir, ['status', b])
  t.match(quoted.stdout, /^damaged=.*"xx\\n\\x1b\[31mgarbage".*\ncreated=/m, 'newline and escape are escaped, the next key on its own line')
  t.notMatch(quoted.stdout, /\x1b/, 'no raw control character reaches the terminal')
  const rm = podctl(dir, ['rm', a, b])
  t.equal(rm.status, 0, rm.stderr)
  t.strictSame(Object.keys(listJson(dir)), [])
})

t.test('property: random damage to random files of random pods never breaks the healthy ones', async (t) => {
  const FILES = ['pod.json', 'manifest', 'apps', 'logs'] as const
  const DAMAGE: Damage[] = ['truncate', 'garbage', 'directory', 'symlink', 'empty', 'apps-null', 'remove']
  let run = 0
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.constantFrom<'exited' | 'prepared'>('exited', 'prepared'), { minLength: 2, maxLength: 5 }),
      fc.array(fc.record({ pod: fc.nat(), file: fc.constantFrom(...FILES), how: fc.constantFrom(...DAMAGE) }), { minLength: 1, maxLength: 3 }),
      async (kinds, damages) => {
        const base = path.join(t.testdirName, `run-${run++}`)
        fs.mkdirSync(base, { recursive: true })
        fs.writeFileSync(path.join(base, 'outside'), 'keep\n')
        const dir = path.join(base, 'data')
        const uuids: string[] = []
        for (const k of kinds) uuids.push(k === 'exited' ? await exitedPod(dir) : await preparedPod(dir))
        const before = listJson(dir)
        const sick = new Set<string>()
        for (const d of damages) {
          const u = uuids[d.pod % uuids.length]!
          sick.add(u)
          damage(path.join(where(dir, u), d.file), d.how, path.join(base, 'outside'))
        }
        const after = listJson(dir)
        for (const u of uuids) {
          if (sick.has(u)) {
            if (after[u] === undefined) return false // every pod is listed
          } else if (JSON.stringify(after[u]) !== JSON.stringify(before[u])) return false
        }
        if (/undefined/.test(JSON.stringify(after)) || /undefined/.test(podctl(dir, ['list']).stdout)) return false
        for (const u of uuids) {
          const s = podctl(dir, ['status', u])
          if (s.status !== 0 || /undefined/.test(s.stdout) || STACK_RE.test(s.stderr)) return false
        }
        const healthyPrepared = uuids.find((u) => !sick.has(u) && before[u]?.state === 'prepared')
        if (healthyPrepared !== undefined && podctl(dir, ['rm', healthyPrepared]).status !== 0) return false
        const gc = podctl(dir, ['gc', '--grace-period', '0s', '--expire-prepared', '0s'])
        if (gc.status !== 0 || STACK_RE.test(gc.stderr)) return false
        if (Object.keys(listJson(dir)).length !== 0) return false // gc collected every pod, damaged or not
        return fs.readFileSync(path.join(base, 'outside'), 'utf8') === 'keep\n'
      },
    ),
    { numRuns: runsOf(25) },
  )
  t.pass('25 random damages')
})
