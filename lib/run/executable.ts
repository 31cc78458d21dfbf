/**
 * Whether an app's program can be started, checked before spawning it.
 * Apps start through the guardian's `sh` (guardian.ts), which execs them:
 * a program that is missing would only show as that `sh`'s "not found"
 * and exit 127, after the app was recorded as running. Checking first
 * keeps the failure podctl's own ("app NAME could not start: …", the app
 * never running), as when Node spawned the program itself.
 *
 * The check follows execvp: a name with a `/` is taken as it is (relative
 * to the app's working directory); any other name is looked up on the
 * `PATH` of the app's environment, and a candidate that exists but cannot
 * be executed is remembered (EACCES) while the search goes on.
 */
import fs from 'node:fs'
import path from 'node:path'

/** The error of a program that cannot be started, shaped like Node's spawn errors. */
const spawnError = (file: string, code: 'ENOENT' | 'EACCES'): NodeJS.ErrnoException =>
  Object.assign(new Error(`spawn ${file} ${code}`), { code, errno: code === 'ENOENT' ? -2 : -13, syscall: `spawn ${file}`, path: file })

/** 'ok', or why `candidate` cannot be executed. */
const probe = (candidate: string): 'ok' | 'ENOENT' | 'EACCES' => {
  try {
    fs.accessSync(candidate, fs.constants.X_OK)
  } catch (er) {
    return (er as NodeJS.ErrnoException).code === 'ENOENT' || (er as NodeJS.ErrnoException).code === 'ENOTDIR' ? 'ENOENT' : 'EACCES'
  }
  // access() passes directories (their x bit is search permission); execve does not.
  const st = fs.statSync(candidate, { throwIfNoEntry: false })
  if (st === undefined) return 'ENOENT'
  return st.isDirectory() ? 'EACCES' : 'ok'
}

/**
 * Throws ENOENT or EACCES (as spawn would) when `file` cannot be started
 * in `cwd` with environment `env`. Without a `PATH`, where the shell's
 * own default applies, a bare name is left to the shell.
 */
export const checkExecutable = (file: string, cwd: string, env: NodeJS.ProcessEnv): void => {
  if (file === '') throw spawnError(file, 'ENOENT')
  if (file.includes('/')) {
    const why = probe(path.resolve(cwd, file))
    if (why !== 'ok') throw spawnError(file, why)
    return
  }
  if (env.PATH === undefined) return
  let denied = false
  for (const dir of env.PATH.split(':')) {
    // An empty entry is the working directory, as for execvp.
    const why = probe(path.resolve(cwd, dir, file))
    if (why === 'ok') return
    if (why === 'EACCES') denied = true
  }
  throw spawnError(file, denied ? 'EACCES' : 'ENOENT')
}
