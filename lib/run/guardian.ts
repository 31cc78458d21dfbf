/**
 * The guardian: a tiny `sh` in its own session that kills the pod's apps
 * when the supervisor dies, however it dies (SIGKILL included). It reads
 * process-group ids from a pipe whose only writer is the supervisor; when
 * the supervisor dies the kernel closes that pipe, `read` sees end of
 * file, and the guardian SIGKILLs every group still listed. Node offers no
 * PR_SET_PDEATHSIG without a native addon; a pipe's EOF is the portable
 * equivalent. Costs one small process per running pod.
 */
import { spawn, type ChildProcess } from 'node:child_process'

// "+PGID" adds a group, "-PGID" removes one (the app ended and its group
// was killed); on EOF every listed group gets SIGKILL.
const SCRIPT = `
trap '' INT HUP TERM
pgs=" "
while IFS= read -r line; do
  case "$line" in
    +*) pgs="$pgs\${line#+} " ;;
    -*) pgs=$(printf '%s' "$pgs" | sed "s/ \${line#-} / /") ;;
  esac
done
for pg in $pgs; do kill -s KILL -- "-$pg" 2>/dev/null; done
`

export class Guardian {
  #child: ChildProcess | undefined

  start(): void {
    const child = spawn('/bin/sh', ['-c', SCRIPT], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] })
    child.on('error', () => {
      this.#child = undefined // no guardian: the next podctl command reaps orphans instead
    })
    child.stdin!.on('error', () => {})
    child.unref()
    ;(child.stdin as unknown as { unref?: () => void }).unref?.()
    this.#child = child
  }

  get pid(): number | undefined {
    return this.#child?.pid
  }

  add(pgid: number): void {
    this.#child?.stdin?.write(`+${pgid}\n`)
  }

  remove(pgid: number): void {
    this.#child?.stdin?.write(`-${pgid}\n`)
  }

  /** Ends the guardian: it kills whatever is still listed, then exits. */
  stop(): void {
    this.#child?.stdin?.end()
    this.#child = undefined
  }
}
