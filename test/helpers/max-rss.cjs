// Preloaded with `node -r` into a process under test: at its exit, prints
// its peak resident memory (KiB) on stderr as the last line, "max-rss=N".
// VmHWM, not getrusage's maxrss: Linux carries maxrss over fork and exec,
// so a child of a large parent (a test that built 100,000 pods) would
// report the parent's size; VmHWM belongs to the memory map exec made.
process.on('exit', () => {
  const fs = require('node:fs')
  const hwm = /^VmHWM:\s+(\d+) kB$/m.exec(fs.readFileSync('/proc/self/status', 'utf8'))?.[1]
  fs.writeSync(2, `max-rss=${hwm ?? 'unknown'}\n`)
})
