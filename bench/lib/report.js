// The results table and the machine description.
import os from 'node:os'
import { spawnSync } from 'node:child_process'

export const machineInfo = (dir) => {
  const df = spawnSync('df', ['-T', dir], { encoding: 'utf8' })
  const line = (df.stdout ?? '').trim().split('\n')[1]?.split(/\s+/) ?? []
  return {
    cpus: os.availableParallelism?.() ?? os.cpus().length,
    cpu_model: os.cpus()[0]?.model ?? 'unknown',
    memory_mib: Math.round(os.totalmem() / 2 ** 20),
    node: process.version,
    kernel: `${os.type()} ${os.release()}`,
    tmpdir: dir,
    filesystem: line.length >= 2 ? { device: line[0], type: line[1], mounted_on: line[6] } : null,
  }
}

const fmt = (x) => (typeof x === 'number' ? (Number.isFinite(x) ? x.toFixed(1) : '-') : x ?? '-')

/** Rows: { op, n, median, floorName, floor, ratio, target, verdict }. */
export const formatTable = (rows) => {
  const head = ['operation', 'N', 'median ms', 'floor', 'floor ms', 'ratio', 'target', 'result']
  const body = rows.map((r) => [
    r.op,
    r.n === undefined ? '-' : r.n.toLocaleString('en-US'),
    fmt(r.median),
    r.floorName ?? '-',
    fmt(r.floor),
    typeof r.ratio === 'number' && Number.isFinite(r.ratio) ? r.ratio.toFixed(2) : '-',
    r.target ?? '-',
    r.verdict ?? '-',
  ])
  const all = [head, ...body]
  const w = head.map((_, i) => Math.max(...all.map((row) => row[i].length)))
  const right = new Set([1, 2, 4, 5])
  const line = (row) => row.map((c, i) => (right.has(i) ? c.padStart(w[i]) : c.padEnd(w[i]))).join('  ').trimEnd()
  return [line(head), w.map((n) => '-'.repeat(n)).join('  '), ...body.map(line)].join('\n') + '\n'
}

/** The same table as Markdown, for Documentation/performance.md. */
export const formatMarkdown = (rows) => {
  const head = ['operation', 'N', 'median ms', 'floor', 'floor ms', 'ratio', 'target', 'result']
  const out = [`| ${head.join(' | ')} |`, `|${head.map((_, i) => ([1, 2, 4, 5].includes(i) ? '---:' : '---')).join('|')}|`]
  for (const r of rows) {
    out.push(
      `| ${[
        `\`${r.op}\``,
        r.n === undefined ? '-' : r.n.toLocaleString('en-US'),
        fmt(r.median),
        r.floorName ?? '-',
        fmt(r.floor),
        typeof r.ratio === 'number' && Number.isFinite(r.ratio) ? r.ratio.toFixed(2) : '-',
        r.target ?? '-',
        r.verdict ?? '-',
      ].join(' | ')} |`,
    )
  }
  return out.join('\n') + '\n'
}
