/**
 * Which program an `exec:` provisioner runs. A class names it
 * `exec:NAME`, and on each node NAME is the program `<dir>/NAME` (an
 * executable, or a link to one) of the node's own configuration,
 * /etc/podctl/provisioners by default (--provisioners-dir), as the
 * kubelet finds a FlexVolume driver by name in its own plugin directory.
 * What a class or volume record says (in a data dir, or in a fleet's
 * etcd, which podctl does not trust) only chooses among the programs the
 * node's root installed; it never supplies a path. A class of a data dir
 * may still name its program by absolute path (`exec:/abs/path`): the
 * data dir and its classes are the invoking user's own (CONTRACT §10).
 *
 * The program, and every directory on the way to it, must be owned by
 * root or the invoking user and writable by neither group nor others
 * (lib/fs/trust.ts): otherwise whoever could change it would choose what
 * root's podctl runs.
 */
import path from 'node:path'
import { PodctlError, oneLine } from '../errors.js'
import { untrustedProgram } from '../fs/trust.js'

/** Where a node's provisioner programs are, unless --provisioners-dir says otherwise. */
export const DEFAULT_PROVISIONERS_DIR = '/etc/podctl/provisioners'

/** A provisioner's name: one file name in the provisioners directory. */
export const PROVISIONER_NAME_RE = /^[a-z0-9][a-z0-9._-]{0,62}$/

/** What an `exec:` provisioner names: a program of the node's configuration, or (in a data dir) a path. */
export type ExecTarget = { name: string } | { program: string }

/** What `exec:X` names, or why it names nothing valid; undefined when `provisioner` is not `exec:`. */
export const execTarget = (provisioner: string): ExecTarget | { problem: string } | undefined => {
  if (!provisioner.startsWith('exec:')) return undefined
  const what = provisioner.slice('exec:'.length)
  if (PROVISIONER_NAME_RE.test(what)) return { name: what }
  // eslint-disable-next-line no-control-regex
  if (what.startsWith('/') && !/[\x00-\x1f\x7f]/.test(what) && path.posix.normalize(what) === what) return { program: what }
  return { problem: `${JSON.stringify(provisioner)} names no program: give exec:NAME (a program in ${DEFAULT_PROVISIONERS_DIR}/, e.g. exec:dir) or, for a class of a data dir, exec:/abs/path` }
}

export interface ProgramOptions {
  /** The node's provisioners directory (default DEFAULT_PROVISIONERS_DIR). */
  dir?: string | undefined
  /** The class or volume comes from a fleet's etcd: only names are taken. */
  fleet?: boolean | undefined
  /** This node's name, for messages. */
  node?: string | undefined
  /** Whose programs may run (default: the invoking user). */
  uid?: number | undefined
}

/**
 * The program that `provisioner` (`exec:NAME` or `exec:/abs/path`) runs on
 * this node, checked as the module comment says; EFAILED naming the
 * provisioner and what is wrong (it becomes a ProvisioningFailed or
 * VolumeFailedDelete event).
 */
export const programOf = (provisioner: string, opts: ProgramOptions = {}): string => {
  const target = execTarget(provisioner)
  const shown = oneLine(provisioner)
  if (target === undefined) throw new PodctlError('EFAILED', `bug: ${shown} is not an exec provisioner`)
  if ('problem' in target) throw new PodctlError('EFAILED', oneLine(target.problem))
  const dir = opts.dir ?? DEFAULT_PROVISIONERS_DIR
  const here = opts.node !== undefined ? `node ${opts.node}` : 'this node'
  let program: string
  if ('program' in target) {
    if (opts.fleet) {
      throw new PodctlError('EFAILED', `provisioner ${shown} names a program by its path: a fleet names provisioners (exec:NAME), and each node maps a name to a program of its own configuration (${dir}/NAME)`)
    }
    program = target.program
  } else program = path.join(dir, target.name)
  const bad = untrustedProgram(program, opts.uid ?? process.geteuid?.() ?? 0)
  if (bad === undefined) return program
  if ('name' in target && bad.path === program && bad.why === 'there is no such file') {
    throw new PodctlError('EFAILED', `provisioner ${shown} is not configured on ${here}: there is no ${program} (install its program there, owned by root, mode 755; or give --provisioners-dir DIR)`)
  }
  // The fix is in the message: it becomes the claim's (or volume's) event.
  const why = bad.fix !== undefined ? `${bad.path} can be changed by someone else (${bad.why}); fix it: ${bad.fix}` : `${bad.path}: ${bad.why}`
  throw new PodctlError('EFAILED', `provisioner ${shown}: its program ${program} is not safe to run on ${here}: ${why}`)
}
