/**
 * Every data dir a test ran bin/podctl on is noted, and when the test's
 * process exits its default network's bridge and its firewall chains go
 * too. An isolated pod joins `bridge` by default, which makes both; tap
 * removes the data dir with the test, and the host would keep them (as it
 * keeps podman's). Networks made with `network create` are the tests' own
 * to take down (network.ts's teardownNetworking).
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { bridgeName, dataDirTag } from '../../lib/network/firewall.js'

const noted = new Set<string>()

/** Tables and chains of a data dir's firewall, with where each is jumped to from. */
const CHAINS = [
  ['iptables', 'filter', 'FORWARD', 'PODCTL-FWD-'],
  ['iptables', 'filter', 'INPUT', 'PODCTL-IN-'],
  ['iptables', 'nat', 'POSTROUTING', 'PODCTL-NAT-'],
  ['ip6tables', 'filter', 'FORWARD', 'PODCTL-FWD-'],
  ['ip6tables', 'nat', 'POSTROUTING', 'PODCTL-NAT-'],
] as const

const quiet = (cmd: string, args: string[]): number | null => spawnSync(cmd, args, { stdio: 'ignore' }).status

/** The chains iptables-save and ip6tables-save list: two programs run, however many data dirs. */
const chainsNow = (): string => ['iptables-save', 'ip6tables-save'].map((c) => spawnSync(c, [], { encoding: 'utf8' }).stdout ?? '').join('\n')

/**
 * Removes data dir `dir`'s chains (and the jumps to them) and the bridges
 * named. Sync: it runs at exit. `saved` is chainsNow()'s text, to skip the
 * data dirs that have none.
 */
export const removeNetworkingOf = (dir: string, bridges: readonly string[], saved = chainsNow()): void => {
  for (const b of bridges) if (fs.existsSync(`/sys/class/net/${b}`)) quiet('ip', ['link', 'del', b])
  const tag = dataDirTag(dir)
  if (!saved.includes(`-${tag}`)) return
  for (const [ipt, table, from, prefix] of CHAINS) {
    const chain = `${prefix}${tag}`
    while (quiet(ipt, ['-w', '-t', table, '-D', from, '-m', 'comment', '--comment', 'podctl networks', '-j', chain]) === 0);
    quiet(ipt, ['-w', '-t', table, '-F', chain])
    quiet(ipt, ['-w', '-t', table, '-X', chain])
  }
}

const sweep = (): void => {
  if (process.getuid?.() !== 0) return // only root's pods have bridges
  const saved = chainsNow()
  for (const dir of noted) removeNetworkingOf(dir, [bridgeName(dir, 'bridge')], saved)
}

/** Where `dir` really is, while it (or its parent) exists: at exit it is gone, and the names are of the real path. */
const realDir = (dir: string): string => {
  const abs = path.resolve(dir)
  for (const [p, rest] of [[abs, ''], [path.dirname(abs), path.basename(abs)]] as const) {
    try {
      return path.join(fs.realpathSync(p), rest)
    } catch {
      // not there (yet)
    }
  }
  return abs
}

/** Notes `dir` (a data dir bin/podctl is run on) for the sweep at exit. */
export const noteDataDir = (dir: string): void => {
  if (noted.size === 0) process.once('exit', sweep)
  noted.add(realDir(dir))
}
