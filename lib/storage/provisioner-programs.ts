/**
 * Which program an `exec:` provisioner runs: `exec:NAME` is `<dir>/NAME` of
 * the node's own configuration, and only a data dir's class may name a path,
 * the program safe from others (Documentation/devel/controller.md).
 */
import path from 'node:path'
import { PodctlError, oneLine } from '../errors.js'
import { untrustedProgram } from '../fs/trust.js'
import { CONTROL_RE } from './answer-path.js'

/** Where a node's provisioner programs are, unless --provisioners-dir says otherwise. */
export const DEFAULT_PROVISIONERS_DIR = '/etc/podctl/provisioners'

/** A provisioner's name: one file name in the provisioners directory. */
const PROVISIONER_NAME_RE = /^[a-z0-9][a-z0-9._-]{0,62}$/

/** What `exec:X` names (a program of the node's configuration, or a path), or why it names nothing valid; undefined when not `exec:`. */
export const execTarget = (provisioner: string): { name: string } | { program: string } | { problem: string } | undefined => {
  if (!provisioner.startsWith('exec:')) return undefined
  const what = provisioner.slice('exec:'.length)
  if (PROVISIONER_NAME_RE.test(what)) return { name: what }
  if (what.startsWith('/') && !CONTROL_RE.test(what) && path.posix.normalize(what) === what) return { program: what }
  return { problem: `${JSON.stringify(provisioner)} names no program: give exec:NAME (a program in ${DEFAULT_PROVISIONERS_DIR}/, e.g. exec:dir) or, for a class of a data dir, exec:/abs/path` }
}

export interface ProgramOptions {
  /** The node's provisioners directory (--provisioners-dir; default DEFAULT_PROVISIONERS_DIR). */
  provisionersDir?: string | undefined
  /** The class or volume comes from a fleet's etcd: only names are taken. */
  fleet?: boolean | undefined
  /** This node's name, for messages. */
  node?: string | undefined
}

/** The program that `provisioner` runs on this node, checked; EFAILED saying what is wrong, which becomes the object's event. */
export const programOf = (provisioner: string, opts: ProgramOptions = {}): string => {
  const target = execTarget(provisioner)
  const shown = oneLine(provisioner)
  if (target === undefined) throw new PodctlError('EFAILED', `bug: ${shown} is not an exec provisioner`)
  if ('problem' in target) throw new PodctlError('EFAILED', oneLine(target.problem))
  const dir = opts.provisionersDir ?? DEFAULT_PROVISIONERS_DIR
  const here = opts.node !== undefined ? `node ${opts.node}` : 'this node'
  if ('program' in target && opts.fleet) {
    throw new PodctlError('EFAILED', `provisioner ${shown} names a program by its path: a fleet names provisioners (exec:NAME), and each node maps a name to a program of its own configuration (${dir}/NAME)`)
  }
  const program = 'program' in target ? target.program : path.join(dir, target.name)
  const bad = untrustedProgram(program, process.geteuid?.() ?? 0)
  if (bad === undefined) return program
  if ('name' in target && bad.path === program && bad.why === 'there is no such file') {
    throw new PodctlError('EFAILED', `provisioner ${shown} is not configured on ${here}: there is no ${program} (install its program there, owned by root, mode 755; or give --provisioners-dir DIR)`)
  }
  // The fix is in the message: it becomes the claim's (or volume's) event.
  const why = bad.fix !== undefined ? `${bad.path} can be changed by someone else (${bad.why}); fix it: ${bad.fix}` : `${bad.path}: ${bad.why}`
  throw new PodctlError('EFAILED', `provisioner ${shown}: its program ${program} is not safe to run on ${here}: ${why}`)
}
