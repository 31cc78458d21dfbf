// Preloaded with `node -r` into a process under test: at its exit, prints
// its peak resident memory (KiB) on stderr as the last line, "max-rss=N".
process.on('exit', () => {
  require('node:fs').writeSync(2, `max-rss=${process.resourceUsage().maxRSS}\n`)
})
