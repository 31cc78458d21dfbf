/** A volume as one `podctl status` line: a module free of imports, as the status command loads it at start-up. */
import type { VolumeView } from './view.js'

const orDash = (n: number | null): string => (n === null ? '-' : String(n))

/** The status line of one volume: `volume-NAME=kind=K path=P used_bytes=N ...` ("-" for unknown). */
export const volumeStatusLine = (v: VolumeView): string =>
  `volume-${v.name}=kind=${v.kind} path=${v.path} used_bytes=${orDash(v.used_bytes)} used_inodes=${orDash(v.used_inodes)} capacity_bytes=${orDash(v.capacity_bytes)} available_bytes=${orDash(v.available_bytes)}`
