/**
 * Plugs volume tear-down into Pod.remove() (see setBeforeRemoveHook in
 * lib/pod/pod.ts). Imported for its effect by the modules that delete pods.
 */
import { setBeforeRemoveHook } from '../pod/pod.js'
import { tearDownPodVolumes } from './pod-volumes.js'

setBeforeRemoveHook((pod) => tearDownPodVolumes(pod))
