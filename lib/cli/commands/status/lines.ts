/** How status prints a pod as text: rkt's key=value lines (a pod of this data dir, or of the fleet). */
import { oneLine } from '../../../errors.js'
import type { PodView } from '../../../pod/view.js'
import { volumeStatusLine } from '../../../volume/status-line.js'
import type { VolumeView } from '../../../volume/view.js'
import { styleState } from '../../output.js'

/** rkt-style key=value lines; keys with no value yet are left out. */
export const statusLines = (v: PodView & { volumes?: VolumeView[] }, colour = false): string => {
  // Values are one line each (a fleet's pods come from etcd, a volume's path from a provisioner).
  const lines = [`state=${styleState(oneLine(v.state), colour)}`]
  if (v.damaged !== undefined) lines.push(`damaged=${oneLine(v.damaged)}`)
  if (v.failure !== undefined) lines.push(`failure=${oneLine(v.failure)}`)
  if (v.created_at) lines.push(`created=${oneLine(String(v.created_at))}`)
  if (v.started_at) lines.push(`started=${oneLine(String(v.started_at))}`)
  if (v.pid !== null) lines.push(`pid=${oneLine(String(v.pid))}`)
  if (v.runtime !== null) lines.push(`runtime=${oneLine(v.runtime)}`)
  // CONTRACT §13: a pod of image apps says how their roots are made (`rootfs=copy` where overlayfs cannot be mounted); each app's line follows.
  const rootfs = [...new Set(v.apps.flatMap((a) => (a.rootfs !== undefined ? [oneLine(a.rootfs)] : [])))]
  if (rootfs.length > 0) lines.push(`rootfs=${rootfs.join(',')}`)
  lines.push(`exited=${v.state === 'exited' || v.state === 'exited garbage' || v.state === 'exited deleting'}`)
  // CONTRACT §14: each network's address (IPv4, else IPv6), and the IPv6 one beside an IPv4; named as the app lines are.
  for (const n of Array.isArray(v.networks) ? v.networks : []) {
    const name = oneLine(String(n.name))
    lines.push(`network-${name}=${oneLine(String(n.ip ?? n.ip6 ?? ''))}`)
    if (n.ip !== null && n.ip6 !== null && n.ip6 !== undefined) lines.push(`network-${name}-ip6=${oneLine(String(n.ip6))}`)
  }
  for (const a of v.apps) {
    const name = oneLine(String(a.name))
    if (a.exit_code !== null) lines.push(`app-${name}=${oneLine(String(a.exit_code))}`)
    if (a.reason !== undefined) lines.push(`app-${name}-reason=${oneLine(a.reason)}`)
    // CONTRACT §12: a privileged app is no boundary, and status says so.
    if (a.privileged === true) lines.push(`app-${name}-privileged=true`)
    if (a.image !== undefined) lines.push(`app-${name}-image=${oneLine(a.image_name ?? a.image)}`)
    // CONTRACT §13: an image app's root is an overlay, or a copy where overlayfs cannot be mounted.
    if (a.rootfs !== undefined) lines.push(`app-${name}-rootfs=${oneLine(a.rootfs)}`)
  }
  for (const vol of v.volumes ?? []) lines.push(oneLine(volumeStatusLine(vol)))
  return `${lines.join('\n')}\n`
}
