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
import { Marked, type RendererExtension, type Tokens } from 'marked'
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

/*
 * What marked-man leaves wrong, and man pages must get right at 80
 * columns: its tables are tbl boxes of one line per row, which overprint
 * once a row is wider than the terminal; its code blocks keep lines of
 * any length; with its `breaks` every source line of a list item is a
 * line of its own; and quotes in code spans stay HTML entities (marked
 * escapes them, marked-man decodes only <, > and &).
 */

/** Columns a code block's line may take: 80, less the page's indent (7) and the block's (2), less a margin for a list's indent. */
const CODE_WIDTH = 68

/**
 * A code block's line folded to CODE_WIDTH at spaces (a word longer than
 * that is cut). A shell command (`$ ...`) is folded with a trailing `\`,
 * so that what a reader copies still runs; its continuations and those of
 * output are indented two more columns.
 */
const fold = (line: string): string[] => {
  const command = /^\s*\$ /.test(line)
  const indent = ' '.repeat(Math.min((/^\s*/.exec(line)?.[0].length ?? 0) + 2, CODE_WIDTH / 2))
  const lines: string[] = []
  let rest = line
  while (rest.length > CODE_WIDTH) {
    const room = command ? CODE_WIDTH - 2 : CODE_WIDTH
    const space = rest.lastIndexOf(' ', room)
    const cut = space > indent.length ? space : room
    lines.push(rest.slice(0, cut).trimEnd() + (command ? ' \\' : ''))
    rest = indent + rest.slice(cut).trimStart()
  }
  lines.push(rest)
  return lines
}

/** roff's escapes for a line of a no-fill block (marked-man's own rules: backslashes, hyphens, and a leading dot or quote). */
const roffLiteral = (s: string): string =>
  s.replace(/\\/g, '\\\\').replace(/-/g, '\\-').replace(/^(\s*)([.'])/, '$1\\&$2')

const code: RendererExtension = {
  name: 'code',
  // A request starts a line: in a list's tight item the text before it ends without one.
  renderer: (token) => ['', '.sp', '.RS 2', '.nf', ...(token as Tokens.Code).text.split('\n').flatMap(fold).map(roffLiteral), '.fi', '.RE', ''].join('\n'),
}

/**
 * A table as tagged paragraphs (.TP), one a row: the first cell is the
 * tag; the text is the cell of the column that describes (Description,
 * Meaning, What …), else of the second; the other cells follow it as
 * "Heading: value" lines. This reads at any width, where a table of four
 * columns does not at 80.
 */
const table: RendererExtension = {
  name: 'table',
  renderer(this: { parser: { parseInline(tokens: Tokens.Generic[]): string } }, token) {
    const t = token as Tokens.Table
    const inline = (cell: Tokens.TableCell): string => this.parser.parseInline(cell.tokens).trim()
    const describing = t.header.findIndex((h, i) => i > 0 && /^(description|meaning|what\b.*)$/i.test(h.text.trim()))
    const main = describing > 0 ? describing : 1
    const rows = t.rows.map((row) => {
      const others = row.flatMap((cell, i) => {
        const value = inline(cell)
        return i === 0 || i === main || value === '' ? [] : [`${inline(t.header[i]!)}: ${value}`]
      })
      const text = row[main] ? inline(row[main]) : ''
      return ['.TP', row[0] ? inline(row[0]) : '', ...[text, ...others].filter((l) => l !== '').join('\n.br\n').split('\n')].join('\n')
    })
    return `${rows.join('\n')}\n.PP\n`
  },
}

/**
 * A link as its text and, where it says more, its target in angle
 * brackets, on the line with the words around it (marked-man puts it on
 * lines of its own, so that a space stands between it and a bracket or a
 * comma after it). A target may break after a slash or a #, never at a hyphen.
 */
const link: RendererExtension = {
  name: 'link',
  renderer(this: { parser: { parseInline(tokens: Tokens.Generic[]): string } }, token) {
    const l = token as Tokens.Link & { punctuation?: string }
    const text = this.parser.parseInline(l.tokens)
    const target = l.href.replace(/-/g, '\\-').replace(/\./g, '\\.').replace(/[/#]/g, '$&\\:')
    // A link within the page (#heading) says nothing more; \\% keeps roff from hyphenating the target.
    const shown = l.href.startsWith('#') || l.href === l.text || l.href === `mailto:${l.text}` ? text : `${text} \\(la\\%${target}\\(ra`
    return `${shown}${l.punctuation ?? ''}`
  },
}

/** How many lists the renderer is inside of. */
let listDepth = 0

/** A list, numbered or not, its items' lines filled as one paragraph each. */
const list: RendererExtension = {
  name: 'list',
  renderer(this: { parser: { parse(tokens: Tokens.Generic[], top?: boolean): string } }, token) {
    const l = token as Tokens.List
    const start = typeof l.start === 'number' ? l.start : 1
    const nested = listDepth > 0
    listDepth++
    let items: string[]
    try {
      items = l.items.map((item, i) => {
        const body = this.parser.parse(item.tokens, false).trim().replace(/^\.P\n/, '').replace(/\n\.P\n/g, '\n.IP\n')
        return `${l.ordered ? `.IP ${start + i}. 4` : '.IP \\(bu 2'}\n${body}`
      })
    } finally {
      listDepth--
    }
    // A list in an item goes in by the item's indent (.RS alone), and its end gives the item's text its indent back.
    return nested ? `\n.RS\n${items.join('\n')}\n.RE\n` : `\n.RS 0\n${items.join('\n')}\n.RE\n.P\n`
  },
}

/**
 * The finished page: HTML entities marked leaves in code spans and
 * escapes as roff's glyphs (safe in a macro's arguments too), and no empty
 * line outside a no-fill block (roff prints one; marked-man leaves them
 * around links).
 */
const finish = (roff: string): string => {
  let filled = true
  const lines = roff.replace(/&quot;/g, '\\(dq').replace(/&#39;/g, '\\(aq').split('\n')
  return lines
    .filter((line, i) => {
      if (line === '.nf') filled = false
      if (line === '.fi') filled = true
      return !filled || line !== '' || i === lines.length - 1
    })
    .join('\n')
}

Object.assign(markedMan, { manVersion: version, manual: 'podctl manual' })
fs.rmSync(out, { recursive: true, force: true })
fs.mkdirSync(out, { recursive: true })
for (const page of pages) {
  const md = manSource(page.doc, page.name, page.args.length === 0 ? 'a daemonless pod lifecycle manager' : describe(page.args))
  const marked = new Marked().use(markedMan as never).use({ breaks: false, extensions: [code, table, list, link] })
  fs.writeFileSync(path.join(out, `${page.name}.1`), finish(marked.parse(md) as string))
}
process.stdout.write(`man: ${pages.length} pages in ${path.relative(root, out)}/\n`)
