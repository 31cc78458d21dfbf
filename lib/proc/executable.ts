/**
 * Finding the program an app runs, by execvp's rules, in one place: at
 * prepare time (a missing program is a usage error before anything is
 * written) and just before spawning (apps start through the guardian's
 * `sh`, which execs them: a program missing then would only show as that
 * `sh`'s "not found" after the app was recorded as running).
 *
 * execvp's rules: a name with a `/` is taken as it is (relative to the
 * app's working directory); any other name is looked up on the `PATH` of
 * the app's environment, where an empty entry means the working directory,
 * and a candidate that exists but cannot be executed is remembered
 * (EACCES) while the search goes on.
 */
import fs from 'node:fs'
import path from 'node:path'
import { isNotFound } from '../errors.js'

/** The error of a program that cannot be started, shaped like Node's spawn errors. */
const spawnError = (file: string, code: 'ENOENT' | 'EACCES'): NodeJS.ErrnoException =>
  Object.assign(new Error(`spawn ${file} ${code}`), { code, errno: code === 'ENOENT' ? -2 : -13, syscall: `spawn ${file}`, path: file })

/** 'ok', or why `candidate` cannot be executed. */
const probe = (candidate: string): 'ok' | 'ENOENT' | 'EACCES' => {
  try {
    fs.accessSync(candidate, fs.constants.X_OK)
  } catch (er) {
    return isNotFound(er) ? 'ENOENT' : 'EACCES'
  }
  // access() passes directories (their x bit is search permission); execve does not.
  const st = fs.statSync(candidate, { throwIfNoEntry: false })
  if (st === undefined) return 'ENOENT'
  return st.isDirectory() ? 'EACCES' : 'ok'
}

/**
 * The path execvp would run for `file` in working directory `cwd` with
 * environment `env`; throws ENOENT or EACCES as spawn would. Without a
 * `PATH`, where the shell's own default applies, a bare name is returned
 * as it is. `cwd` undefined: the working directory does not exist yet (at
 * prepare time), so nothing relative to it is found.
 */
export const lookPath = (file: string, cwd: string | undefined, env: NodeJS.ProcessEnv): string => {
  if (file === '') throw spawnError(file, 'ENOENT')
  const inCwd = (rel: string): string | undefined => (path.isAbsolute(rel) ? rel : cwd === undefined ? undefined : path.resolve(cwd, rel))
  if (file.includes('/')) {
    const p = inCwd(file)
    const why = p === undefined ? 'ENOENT' : probe(p)
    if (why !== 'ok') throw spawnError(file, why)
    return p!
  }
  if (env.PATH === undefined) return file
  let denied = false
  for (const dir of env.PATH.split(':')) {
    // An empty entry is the working directory, as for execvp.
    const p = inCwd(path.join(dir || '.', file))
    if (p === undefined) continue
    const why = probe(p)
    if (why === 'ok') return p
    if (why === 'EACCES') denied = true
  }
  throw spawnError(file, denied ? 'EACCES' : 'ENOENT')
}

/** Where a program is: the first executable file of that name on PATH, or in the sbin and bin dirs a user's PATH may lack. */
export const findProgram = (name: string, env: NodeJS.ProcessEnv = process.env): string | undefined => {
  const dirs = [...(env.PATH ?? '').split(':').filter((d) => d.startsWith('/')), '/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/sbin', '/usr/bin', '/bin']
  for (const d of dirs) {
    const p = path.join(d, name)
    if (probe(p) === 'ok') return p
  }
  return undefined
}
