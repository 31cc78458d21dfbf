/**
 * Plugs volume tear-down into Pod.remove() (see setBeforeRemoveHook in
 * lib/pod/pod.ts). Imported for its effect by the modules that delete pods
 * (gc, rm). lib/volume/pod-volumes.ts registers the same hook when it is
 * loaded, so a process that set volumes up can always tear them down.
 */
import './pod-volumes.js'
