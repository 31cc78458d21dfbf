// Man pages: one per documented command, made at build time from
// Documentation/ (lib/build/man.ts), each listed in package.json's "man"
// (what a global install links into man's path), each named and described
// as the command's --help describes it, and each one that man can render.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { ROOT } from '../helpers/common.js'
import { podctl } from '../helpers/cli-util.js'

const manDir = path.join(ROOT, 'dist', 'man')
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { man: string[]; files: string[] }

t.test('one page per command page of Documentation/, all of them in package.json', async (t) => {
  const docs = fs.readdirSync(path.join(ROOT, 'Documentation', 'subcommands')).filter((f) => f.endsWith('.md'))
  const pages = fs.readdirSync(manDir).sort()
  t.same(pages, ['podctl.1', ...docs.map((f) => `podctl-${f.slice(0, -3)}.1`)].sort(), 'podctl.1 and podctl-CMD.1 for each subcommands/CMD.md')
  t.same([...pkg.man].sort(), pages.map((p) => `./dist/man/${p}`), 'package.json "man" lists exactly those')
  t.ok(pkg.files.includes('dist/man'), 'and "files" ships them')
})

t.test('each page is named and described as the command\'s --help says', async (t) => {
  for (const page of fs.readdirSync(manDir).filter((p) => p !== 'podctl.1')) {
    const cmd = page.slice('podctl-'.length, -'.1'.length)
    // Without roff's escaped hyphens, to compare with plain text.
    const roff = fs.readFileSync(path.join(manDir, page), 'utf8').replace(/\\-/g, '-')
    t.ok(roff.startsWith(`.TH "PODCTL-${cmd.toUpperCase()}" "1"`), `${page}: .TH`)
    const help = podctl(undefined, [cmd, '--help']).stdout.split('\n\n')[1]!.replace(/\s+/g, ' ').trim()
    const name = /\.SH "NAME"\n\\fB(.*?)\\fR - (.*)\n/.exec(roff)
    t.equal(name?.[1], `podctl-${cmd}`, `${page}: its name`)
    // roff writes "." as \. and may put \| before it.
    const description = name?.[2]?.replace(/\\\|?\.?/g, (m) => (m.endsWith('.') ? '.' : ''))
    t.equal(description, help, `${page}: the --help description`)
  }
})

t.test('man renders them', { skip: spawnSync('man', ['--version']).status === 0 ? false : 'no man(1) on this machine' }, async (t) => {
  const r = spawnSync('man', ['-l', path.join(manDir, 'podctl-list.1')], { encoding: 'utf8', env: { ...process.env, MANPAGER: 'cat', PAGER: 'cat', MANWIDTH: '80' } })
  t.equal(r.status, 0, r.stderr)
  t.match(r.stdout, /PODCTL-LIST\(1\)/)
  t.match(r.stdout, /podctl-list - list all pods/)
})

// Each page as a reader sees it on a terminal 80 columns wide:
// no HTML entity (marked escapes quotes in code spans), no line wider than
// the terminal (tables, code blocks, long words), no line troff could not
// break.
t.test('every page reads at 80 columns', { skip: spawnSync('man', ['--version']).status === 0 ? false : 'no man(1) on this machine' }, async (t) => {
  for (const width of [80]) {
    for (const page of fs.readdirSync(manDir)) {
      const r = spawnSync('man', ['-l', path.join(manDir, page)], { encoding: 'utf8', env: { ...process.env, MANPAGER: 'cat', PAGER: 'cat', MANWIDTH: String(width), LANG: 'C.UTF-8' } })
      t.equal(r.status, 0, `${page} at ${width}: man exits 0`)
      t.notMatch(r.stderr, /can't break line|cannot break line/, `${page} at ${width}: troff broke every line`)
      t.strictSame(r.stdout.match(/&(?:[a-z][a-z0-9]*|#\d+|#x[0-9a-f]+);/gi) ?? [], [], `${page} at ${width}: no HTML entity`)
      // A request glued to the end of a text line is printed as text (".RS 0", ".sp").
      t.strictSame(r.stdout.match(/\S\.(?:RS|RE|sp|IP|TP|br|nf|fi)\b.*/g) ?? [], [], `${page} at ${width}: no roff request shown as text`)
      const wide = r.stdout.split('\n').filter((line) => [...line].length > width)
      t.strictSame(wide, [], `${page} at ${width}: no line over ${width} columns`)
    }
  }
})

t.test('the pages carry no HTML comments (the doc-test\'s hidden sessions)', async (t) => {
  for (const page of fs.readdirSync(manDir)) t.notMatch(fs.readFileSync(path.join(manDir, page), 'utf8'), /<!\\?-\\?-|doctest/, page)
})
