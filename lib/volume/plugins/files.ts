/** `files`: content in `<pod>/volumes/<name>/` projected by the AtomicWriter, updated by `podctl volume update`. */
import { mkdirsInside } from '../../fs/inside.js'
import { AtomicWriter, PROJECTED_DIR_MODE, payloadFromFiles } from '../atomic-writer.js'
import { podVolumeRel } from '../layout.js'
import { inPodVolume } from './empty.js'
import { kindPlugin } from './kind.js'

export const filesPlugin = kindPlugin('podctl.io/files', 'files', (v, name, pod) =>
  inPodVolume(pod, name, () => {
    const w = new AtomicWriter(mkdirsInside(pod.path, podVolumeRel(name), PROJECTED_DIR_MODE))
    // Projected once; after that the content is what the last `volume
    // update` made it, and setting up again keeps it.
    if (w.currentTsDir() === undefined) w.write(payloadFromFiles(v.files))
  }),
)
