// The doc-test (its pages shared among the files test/doc/doctest-*.ts,
// which tap runs at once): every `$ podctl …` session in README.md and
// Documentation/ runs in a real bash against a scratch data dir, and what
// it prints (stdout and stderr, as a terminal shows them) is compared with
// what the page says. What differs from run to run is matched by the
// placeholders defined here, once:
//   - pod UUIDs: the n-th UUID a page shows stands for the n-th UUID the
//     commands print (full, or an 8-or-more-character prefix of one seen
//     before); a UUID or prefix the page types in a command is replaced by
//     the real one it stands for;
//   - times: RFC 3339 times, and relative ones ("just now", "4 minutes ago");
//   - Node's version (v20.20.2), and process ids (pid=4242, "pid":4242);
//   - the data dir is /tmp/doc/data on every page, the current directory /tmp/doc;
//   - runs of spaces are one space (table columns follow their contents);
//   - "…" in a line of output matches anything, and a line that is only
//     "…" matches any number of lines.
// A page sets up what its examples need in hidden sessions,
//   <!-- doctest: setup
//   $ podctl prepare --name web -- /bin/true
//   0c8ce6fc-8a3c-4a8e-9d52-1c1f3c0e7b11
//   -->
// (output listed is checked, none listed is not), and says why a block or
// the whole page is not run: `<!-- doctest: skip REASON -->` before a
// block, `<!-- doctest: page-skip REASON -->` for the page. What only some
// machines can run says what it needs (NEEDS below): `<!-- doctest: needs
// isolation -->` before a block or a setup comment runs it where the
// machine has it and skips it, with the reason, where not; `<!-- doctest:
// page-needs isolation -->` does that for the page. Each skip is printed
// with its reason.
import t from 'tap'
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { ROOT } from '../helpers/common.js'
import { podctlScript, serveDocPodctl } from './doctest-podctl.js'
import { containersMissing } from '../helpers/containers.js'
import { dataDir } from '../helpers/run-util.js'
import { privateIdRange } from '../../lib/runtime/userns.js'
import { networkMissing, teardownNetworking } from './network.js'

interface Session {
  /** Where in the page (line number), for messages. */
  line: number
  hidden: boolean
  steps: { command: string; expected: string[] }[]
}

interface Page {
  file: string
  skip?: string
  sessions: Session[]
  skipped: { line: number; reason: string }[]
}

/**
 * What a block may need of the machine (`<!-- doctest: needs NAME -->`),
 * each a check that says what is missing here, or undefined. The isolated
 * pods of the docs (CONTRACT §12) run as root: rootless, cgroup v1 gives
 * no limits and no stats.
 */
export const NEEDS: Record<string, () => string | undefined> = {
  isolation: () => (process.getuid?.() !== 0 ? 'the test does not run as root' : containersMissing()),
  network: () => networkMissing(),
  subids: () => {
    const why = NEEDS.isolation!()
    if (why !== undefined) return why
    try {
      privateIdRange()
      return undefined
    } catch (er) {
      return (er as Error).message
    }
  },
}

/** Why `need` cannot be met here (its name and what is missing), or undefined when it can. An unknown name is a mistake of the page. */
const unmet = (need: string, check: (need: string) => string | undefined): string | undefined => {
  const why = check(need)
  return why === undefined ? undefined : `needs ${need}: ${why}`
}

const checkNeed = (need: string): string | undefined => {
  const check = NEEDS[need]
  if (check === undefined) throw new Error(`doctest: unknown need ${JSON.stringify(need)} (known: ${Object.keys(NEEDS).join(', ')})`)
  return check()
}

/** The sessions of a page: fenced blocks that start with "$ ", and hidden setup comments. `check` says why a need is not met here. */
export const parsePage = (file: string, text: string, check: (need: string) => string | undefined = checkNeed): Page => {
  const lines = text.split('\n')
  const page: Page = { file, sessions: [], skipped: [] }
  const pageSkip = /<!-- doctest: page-skip (.*?) -->/.exec(text)
  if (pageSkip) page.skip = pageSkip[1]!
  const pageNeed = /<!-- doctest: page-needs (\S+) -->/.exec(text)
  if (pageNeed && page.skip === undefined) {
    const why = unmet(pageNeed[1]!, check)
    if (why !== undefined) page.skip = why
  }
  let skipNext: string | undefined
  const steps = (body: string[]): Session['steps'] => {
    const out: Session['steps'] = []
    for (const l of body) {
      if (l.startsWith('$ ')) out.push({ command: l.slice(2), expected: [] })
      else if (out.length > 0) out[out.length - 1]!.expected.push(l)
    }
    return out
  }
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!
    const skip = /^<!-- doctest: skip (.*?) -->$/.exec(l)
    if (skip) {
      skipNext = skip[1]!
      continue
    }
    const need = /^<!-- doctest: needs (\S+) -->$/.exec(l)
    if (need) {
      skipNext = unmet(need[1]!, check) ?? skipNext
      continue
    }
    if (l === '<!-- doctest: setup') {
      const end = lines.indexOf('-->', i)
      if (skipNext !== undefined) page.skipped.push({ line: i + 1, reason: skipNext })
      else page.sessions.push({ line: i + 1, hidden: true, steps: steps(lines.slice(i + 1, end)) })
      skipNext = undefined
      i = end
      continue
    }
    if (/^```/.test(l)) {
      const end = lines.findIndex((x, j) => j > i && /^```/.test(x))
      const body = lines.slice(i + 1, end)
      if (body[0]?.startsWith('$ ')) {
        if (skipNext !== undefined) page.skipped.push({ line: i + 1, reason: skipNext })
        else page.sessions.push({ line: i + 1, hidden: false, steps: steps(body) })
      }
      skipNext = undefined
      i = end
    }
  }
  return page
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g
const TIME = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g
const AGO = /\b(just now|\d+ (second|minute|hour|day|week|month|year)s? ago|in \d+ (second|minute|hour|day|week|month|year)s?)\b/g

/** UUIDs seen on one side (the page's, or the real ones), each with its number. */
class UuidTable {
  readonly order: string[] = []
  /** Replaces UUIDs, and prefixes of 8+ hex characters of known ones, by <Un>. */
  tokenize(line: string): string {
    let s = line.replace(UUID, (u) => {
      if (!this.order.includes(u)) this.order.push(u)
      return `<U${this.order.indexOf(u)}>`
    })
    s = s.replace(/\b[0-9a-f]{8,35}\b/g, (p) => {
      const i = this.order.findIndex((u) => u.startsWith(p))
      return i < 0 ? p : `<U${i}>`
    })
    return s
  }
}

/** Node's version (v20.20.2): the Node that runs the test, not the page's. */
const NODE_VERSION = /\bv\d+\.\d+\.\d+\b/g

/** Process ids, as status and the JSON print them. */
const PID = /(\bpid=|"pid":)\d+/g

/**
 * The process ids of some output lines, in order: `pid=`/`"pid":` values,
 * and the cells of a table's PID column (app list; the column is found
 * by its header line), which become <PID>.
 */
const processIds = (lines: string[]): { lines: string[]; pids: string[] } => {
  const pids: string[] = []
  let column = -1
  let width = 0
  const out = lines.map((l) => {
    const cells = l.trim().split(/\s+/)
    if (cells.includes('PID')) {
      column = cells.indexOf('PID')
      width = cells.length
      return l
    }
    let line = l
    if (column >= 0 && cells.length === width && /^\d+$/.test(cells[column]!)) {
      pids.push(cells[column]!)
      cells[column] = '<PID>'
      line = cells.join(' ')
    }
    for (const m of line.matchAll(PID)) pids.push(m[0].slice(m[1]!.length))
    return line
  })
  return { lines: out, pids }
}

const normalize = (line: string, uuids: UuidTable): string =>
  uuids
    .tokenize(line)
    .replace(TIME, '<TIME>')
    .replace(AGO, '<AGO>')
    .replace(NODE_VERSION, '<NODE>')
    .replace(PID, '$1<PID>')
    .replace(/[ \t]+/g, ' ')
    .trimEnd()

/** Whether the normalized actual lines match the normalized expected ones ("…" wildcards). */
const matches = (expected: string[], actual: string[]): boolean => {
  if (expected.length === 0) return actual.length === 0
  const [e, ...rest] = expected
  if (e === '…') {
    for (let k = 0; k <= actual.length; k++) if (matches(rest, actual.slice(k))) return true
    return false
  }
  if (actual.length === 0) return false
  const re = new RegExp(`^${e!.split('…').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`)
  return re.test(actual[0]!) && matches(rest, actual.slice(1))
}

/** One bash for a page: state (the current directory, $?) carries from command to command. */
class Shell {
  readonly #bash: ChildProcessWithoutNullStreams
  #buffer = ''
  #waiting: ((out: string) => void) | undefined
  static readonly MARK = '@@doctest-done@@'

  constructor(cwd: string, env: NodeJS.ProcessEnv) {
    this.#bash = spawn('bash', ['--norc', '--noprofile'], { cwd, env })
    this.#bash.stdout.setEncoding('utf8').on('data', (s: string) => {
      this.#buffer += s
      const at = this.#buffer.indexOf(`${Shell.MARK}\n`)
      if (at >= 0 && this.#waiting) {
        const out = this.#buffer.slice(0, at)
        this.#buffer = this.#buffer.slice(at + Shell.MARK.length + 1)
        const w = this.#waiting
        this.#waiting = undefined
        w(out)
      }
    })
    // A page that timed out has its bash killed: closing it then must not throw EPIPE.
    this.#bash.stdin.on('error', () => {})
    this.#bash.stdin.write('exec 2>&1\n')
  }

  /** Runs one command line; what it printed, stdout and stderr together; undefined if it did not end within `timeoutMs`. */
  run(command: string, timeoutMs = 30_000): Promise<string | undefined> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#waiting = undefined
        this.#bash.kill('SIGKILL') // the page stops here: its shell's state is lost
        resolve(undefined)
      }, timeoutMs)
      this.#waiting = (out) => {
        clearTimeout(timer)
        // Our mark's newline, then the command's own last one (a missing one is not told apart).
        resolve(out.replace(/\n$/, '').replace(/\n$/, ''))
      }
      // Its stdin is /dev/null: bash's own is the pipe of the commands to
      // come, which stays open, so a command that reads it (or passes it on,
      // as `enter` does) would wait for ever. The group runs in this shell
      // (cd, variables and functions stay); a comment alone cannot be one.
      // The mark on a line of its own, with $? kept for the next command
      // ("echo $?").
      const line = /^\s*(#.*)?$/.test(command) ? command : `{ ${command}\n} </dev/null`
      this.#bash.stdin.write(`${line}\n__s=$?; printf '\\n${Shell.MARK}\\n'; (exit $__s)\n`)
    })
  }

  close(): void {
    this.#bash.stdin.end('exit\n')
  }
}

/** The docs of the project: README.md and Documentation/ but its devel/ pages (design notes, not examples). */
const docPages = (): string[] => {
  const out = [path.join(ROOT, 'README.md')]
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name)
      if (e.isDirectory() && e.name !== 'devel' && e.name !== 'examples') walk(p)
      else if (e.isFile() && e.name.endsWith('.md') && e.name !== 'performance.md') out.push(p)
    }
  }
  walk(path.join(ROOT, 'Documentation'))
  return out.sort()
}

// DOCTEST_PAGES=list.md,rm.md runs only pages whose path ends so (while converting a page).
const only = process.env.DOCTEST_PAGES?.split(',').filter(Boolean)

/** Registers the tests of share `n` (from 1) of `of` of the doc pages: every `of`-th page, so that each file takes about as long. */
export const docTest = (n: number, of: number): void => {
  const pages = docPages()
    .filter((_, i) => i % of === n - 1)
    .filter((f) => !only || only.some((o) => f.endsWith(o)))
    .map((f) => parsePage(path.relative(ROOT, f), fs.readFileSync(f, 'utf8')))
  if (pages.length === 0) t.pass('no page asked for (DOCTEST_PAGES) is in this share')
  const podctlPort = serveDocPodctl()
  for (const page of pages) {
    const count = page.sessions.filter((s) => !s.hidden).length
    if (count === 0 && page.skipped.length === 0) continue
    t.test(page.file, { skip: page.skip ?? false }, async (t) => {
      // Before the data dir's own teardown (which removes it): its networks' bridges and firewall chains.
      t.teardown(() => teardownNetworking(path.join(t.testdirName, 'data')))
      const data = dataDir(t, { layout: false })
      const cwd = path.dirname(data)
      const bin = path.join(cwd, '.doctest-bin')
      fs.mkdirSync(bin, { recursive: true })
      // 0700: the script holds the secret that lets it ask the test process to run podctl (doctest-podctl.ts).
      fs.writeFileSync(path.join(bin, 'podctl'), podctlScript(await podctlPort), { mode: 0o700 })
      const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${bin}:${process.env.PATH}`, PODCTL_DIR: data, HOME: cwd }
      for (const k of ['NODE_OPTIONS', 'FORCE_COLOR', 'NO_COLOR']) delete env[k]
      const shell = new Shell(cwd, env)
      t.teardown(() => shell.close())
      const docUuids = new UuidTable()
      const realUuids = new UuidTable()
      // A process id the page printed, typed in a command (kill -9 4242), stands for the real one printed there.
      const realPids = new Map<string, string>()
      // The page's /tmp/doc is this test's directory (and /tmp/doc/data its data dir): never a real /tmp/doc.
      const toDoc = (s: string): string => s.split(cwd).join('/tmp/doc')
      if (data !== path.join(cwd, 'data')) throw new Error(`the data dir must be <cwd>/data, not ${data}`)
      for (const r of page.skipped) t.comment(`line ${r.line}: not run: ${r.reason}`)
      for (const session of page.sessions) {
        for (const step of session.steps) {
          // The page's UUIDs and prefixes in the command stand for the real ones.
          const real = (doc: string): string | undefined => {
            const i = docUuids.order.findIndex((u) => u.startsWith(doc))
            return i < 0 ? undefined : realUuids.order[i]?.slice(0, doc.length)
          }
          const command = step.command
            .replace(UUID, (u) => real(u) ?? u)
            .replace(/(?<![-0-9a-f])[0-9a-f]{4,35}(?![-0-9a-f])/g, (w) => real(w) ?? w)
            .replace(/(?<![-\w])\d+(?![-\w])/g, (n) => realPids.get(n) ?? n)
          const raw = await shell.run(command.split('/tmp/doc').join(cwd))
          if (raw === undefined) {
            t.fail(`line ${session.line}: $ ${step.command}: did not end within 30 s (a command that waits belongs in a skipped block)`)
            return
          }
          const out = toDoc(raw)
          const actualLines = out === '' ? [] : out.split('\n')
          if (session.hidden && step.expected.length === 0) {
            actualLines.forEach((l) => normalize(l, realUuids))
            continue
          }
          const wantPids = processIds(step.expected)
          const gotPids = processIds(actualLines)
          if (wantPids.pids.length === gotPids.pids.length) wantPids.pids.forEach((p, i) => realPids.set(p, gotPids.pids[i]!))
          const want = wantPids.lines.map((l) => normalize(l, docUuids))
          const got = gotPids.lines.map((l) => normalize(l, realUuids))
          t.ok(matches(want, got), `line ${session.line}: $ ${step.command}`, { expected: step.expected.join('\n'), actual: out, command })
        }
      }
    })
  }
}
