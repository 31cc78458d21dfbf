/**
 * Man pages, made at build time from Documentation/ with marked-man:
 * podctl(1) from commands.md, podctl-CMD(1) from subcommands/CMD.md. Each
 * page's one-line description (its NAME) is the command's own, as
 * `podctl CMD --help` prints it, so the two never disagree. The pages go
 * to dist/man/, which package.json's "man" lists for a global install.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Marked } from 'marked'
import markedMan from 'marked-man'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
const docs = path.join(root, 'Documentation')
const out = path.join(root, 'dist', 'man')

/** The description line of `podctl ARGS --help` (the paragraph after "Usage:"). */
const describe = (args: string[]): string => {
  const env = { ...process.env }
  delete env.NODE_OPTIONS
  const r = spawnSync(process.execPath, [path.join(root, 'bin', 'podctl'), ...args, '--help'], { encoding: 'utf8', env })
  if (r.status !== 0) throw new Error(`podctl ${args.join(' ')} --help: exit ${r.status}: ${r.stderr}`)
  const paragraphs = r.stdout.split('\n\n')
  return (paragraphs[1] ?? '').replace(/\s+/g, ' ').trim()
}

/** The page's markdown with marked-man's title line, `# name(1) -- description`, in place of its own. */
const manSource = (file: string, name: string, description: string): string => {
  const text = fs.readFileSync(file, 'utf8')
  // HTML comments (the doc-test's setup sessions and directives) are for the web and the tests, not the page: marked-man would print them.
  const visible = text.replace(/<!--[\s\S]*?-->\n?/g, '')
  const body = visible.startsWith('# ') ? visible.slice(visible.indexOf('\n') + 1) : visible
  return `# ${name}(1) -- ${description}\n${body}`
}

const version = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string }).version

const pages: { name: string; doc: string; args: string[] }[] = [
  { name: 'podctl', doc: path.join(docs, 'commands.md'), args: [] },
  ...fs
    .readdirSync(path.join(docs, 'subcommands'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => ({ name: `podctl-${f.slice(0, -3)}`, doc: path.join(docs, 'subcommands', f), args: [f.slice(0, -3)] })),
]

Object.assign(markedMan, { manVersion: version, manual: 'podctl manual' })
fs.rmSync(out, { recursive: true, force: true })
fs.mkdirSync(out, { recursive: true })
for (const page of pages) {
  const md = manSource(page.doc, page.name, page.args.length === 0 ? 'a daemonless pod lifecycle manager' : describe(page.args))
  const marked = new Marked().use(markedMan as never)
  fs.writeFileSync(path.join(out, `${page.name}.1`), marked.parse(md) as string)
}
process.stdout.write(`man: ${pages.length} pages in ${path.relative(root, out)}/\n`)
