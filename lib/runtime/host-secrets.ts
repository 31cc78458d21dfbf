/**
 * What of the host's /etc an app of host programs must not read
 * (CONTRACT §12a). Such an app sees the host's /etc read-only, and as
 * root without a user namespace it holds CAP_DAC_OVERRIDE: file modes do
 * not stop it. So every file of /etc that other users cannot read
 * (/etc/shadow, /etc/gshadow, ssh host keys, sudoers, a service's
 * credentials) and every directory they cannot list is masked in its
 * container, as the runtime masks /proc/kcore: a root app learns no more
 * of the host than an unprivileged host user.
 *
 * Found with find(1) when the pod starts, while the infra is being made:
 * walking /etc from Node costs ten times as much. Pods with a user
 * namespace of their own (rootless, `userns: private`) need none of it:
 * there the host's root is unmapped, and the kernel applies the modes of
 * "others" to their root.
 */
import { spawn } from 'node:child_process'

/** The host's directory whose secrets are masked. */
export const HOST_ETC = '/etc'

/** A bound on what find may print: a host's /etc with more unreadable entries than this is not one podctl has met. */
const MAX_OUTPUT = 1024 * 1024

/**
 * The paths under `dir` that others cannot read: files without o+r, and
 * directories without o+r or o+x (whose contents are then not looked at).
 * Links are skipped: where one leads, the host's directories it reaches
 * are checked on their own.
 */
export const hostSecrets = (dir: string = HOST_ETC): Promise<string[]> =>
  new Promise((resolve, reject) => {
    const child = spawn(
      'find',
      [dir, '-xdev', '(', '-type', 'd', '!', '-perm', '-o=rx', '-print0', '-prune', ')', '-o', '(', '!', '-type', 'l', '!', '-type', 'd', '!', '-perm', '-o=r', '-print0', ')'],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    )
    const chunks: Buffer[] = []
    let size = 0
    child.stdout.on('data', (b: Buffer) => {
      size += b.length
      if (size <= MAX_OUTPUT) chunks.push(b)
      else child.kill('SIGKILL')
    })
    child.once('error', (er) => reject(new Error(`cannot look for the host's secrets in ${dir}: ${er.message}`)))
    child.once('close', () => {
      if (size > MAX_OUTPUT) return reject(new Error(`cannot look for the host's secrets in ${dir}: too many unreadable entries`))
      // find's own errors (an entry gone meanwhile) leave the rest of its answer good.
      resolve(Buffer.concat(chunks).toString('utf8').split('\0').filter((p) => p !== ''))
    })
  })
