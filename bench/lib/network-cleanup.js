// What a benchmark's data dir leaves on the host when its files go: the
// bridges of its networks and its firewall chains (and the jumps to them).
import { spawnSync } from 'node:child_process'

/** Removes data dir `dataDir`'s bridges and chains; run before its files are removed. */
export const removeNetworking = async (dataDir) => {
  const { ownNetworks } = await import('../../dist/lib/network/networks.js')
  const { bridgeOf } = await import('../../dist/lib/network/config.js')
  const { dataDirTag } = await import('../../dist/lib/network/firewall.js')
  for (const n of ownNetworks(dataDir)) {
    const b = 'conflist' in n ? bridgeOf(n.conflist) : undefined
    if (b) spawnSync('ip', ['link', 'del', b])
  }
  const tag = dataDirTag(dataDir)
  for (const [table, from, chain] of [['filter', 'FORWARD', `PODCTL-FWD-${tag}`], ['filter', 'INPUT', `PODCTL-IN-${tag}`], ['nat', 'POSTROUTING', `PODCTL-NAT-${tag}`]]) {
    spawnSync('iptables', ['-w', '-t', table, '-D', from, '-m', 'comment', '--comment', 'podctl networks', '-j', chain])
    spawnSync('iptables', ['-w', '-t', table, '-F', chain])
    spawnSync('iptables', ['-w', '-t', table, '-X', chain])
  }
}
