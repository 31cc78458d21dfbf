/**
 * `host` (hostPath): an existing path of the host, which podctl never changes.
 * `readOnly` is recorded but not enforced: without mount namespaces there is
 * no read-only view to give an app that runs as the same user.
 */
import fs from 'node:fs'
import { PodctlError } from '../../errors.js'
import { volumeMetrics } from '../metrics.js'
import { kindPlugin } from './kind.js'

export const hostPlugin = kindPlugin('podctl.io/host', 'host', ({ source }, name) => ({
  path: source,
  setUp: () => {
    if (!fs.existsSync(source)) throw new PodctlError('EFAILED', `host path ${source} of volume "${name}" does not exist`, 'create it, or change "source" in the manifest')
  },
  // The mount points (links) are the executor's; the source is the host's.
  tearDown: () => {},
  getMetrics: () => volumeMetrics(source, true, { followRoot: true }),
}))
