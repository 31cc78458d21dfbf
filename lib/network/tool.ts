/**
 * The host's own network tools (iptables-restore, iptables, ip), run as
 * lib/proc's bounded children: podctl's firewall rules and network
 * namespaces go through them, as the plugins' do.
 */
import { PodctlError, oneLine } from '../errors.js'
import { runBounded } from '../proc/bounded-child.js'

/** sbin on the way whatever podctl's PATH is: root's tools live there. */
export const toolPath = (p: string | undefined = process.env.PATH): string => {
  const parts = (p ?? '').split(':').filter((d) => d !== '')
  for (const d of ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin']) if (!parts.includes(d)) parts.push(d)
  return parts.join(':')
}

export interface ToolResult {
  status: number | null
  stdout: string
  stderr: string
}

/** Runs `program args...` (found on toolPath) to its end; never throws for its exit status. EFAILED when it cannot start or hangs. */
export const runTool = async (program: string, args: string[], input = '', timeoutMs = 30_000): Promise<ToolResult> => {
  const r = await runBounded(program, args, { input, timeoutMs, maxStdoutBytes: 4 * 1024 * 1024, env: { ...process.env, PATH: toolPath() } })
  if (r.startError !== undefined) throw new PodctlError('EFAILED', `cannot run ${program}: ${r.startError}`, program.startsWith('ip') && program !== 'ip' ? 'install iptables (Debian: apt-get install iptables)' : 'install iproute2')
  if (r.killedFor !== undefined) throw new PodctlError('EFAILED', `${program} ${args.join(' ')} ${r.killedFor}`)
  return { status: r.status, stdout: r.stdout.toString('utf8'), stderr: r.stderr }
}

/** Runs a tool that must succeed: EFAILED with what it said otherwise. */
export const mustRun = async (program: string, args: string[], input = ''): Promise<string> => {
  const r = await runTool(program, args, input)
  if (r.status !== 0) throw new PodctlError('EFAILED', `${program} ${args.join(' ')} failed: ${oneLine(r.stderr.trim() || `exit status ${r.status}`)}`)
  return r.stdout
}
