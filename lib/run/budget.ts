/**
 * What running a pod takes of this process's limits, checked before the
 * pod runs: a supervisor that runs out of file descriptors half-way leaves
 * apps that could not start, and one of 10,000 apps died of it.
 */
import { PodctlError } from '../errors.js'
import { AppTypeMask, visitApps, type PodManifest } from '../pod/manifest.js'
import { openFileCount, softLimit } from '../proc/limits.js'

/** The supervisor's descriptors per running app: stdout, stderr, the guardian's socket, the log. */
const FDS_PER_APP = 4
/** For everything else it opens meanwhile (records, locks, /proc). */
const SPARE_FDS = 16

/**
 * Throws EFAILED, saying how many it needs and how many it may open, when
 * the apps that run at once (every regular app; init apps run one by one)
 * need more open files than this process may have.
 */
export const checkOpenFiles = (m: PodManifest): void => {
  const limit = softLimit('Max open files')
  const open = openFileCount()
  if (limit === undefined || open === undefined) return
  let regular = 0
  visitApps(m, AppTypeMask.regular, () => void regular++)
  const need = open + SPARE_FDS + FDS_PER_APP * Math.max(regular, 1)
  if (need > limit) {
    throw new PodctlError(
      'EFAILED',
      `the pod's ${regular} apps need about ${need} open files, and this process may open ${limit} (ulimit -n)`,
      `raise the limit (ulimit -n ${need}), or split the apps over several pods`,
    )
  }
}
