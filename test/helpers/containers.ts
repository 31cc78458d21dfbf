// Whether this machine can run isolated pods (CONTRACT §12): an OCI
// runtime and the default seccomp profile. Tests that need them say why
// they cannot run instead of failing where the parts are missing.
import { findRuntime } from '../../lib/runtime/runtime.js'
import { containersCommonProfile } from '../../lib/runtime/seccomp.js'

/** Undefined when isolated pods can run here; else what is missing, in words. */
export const containersMissing = (): string | undefined => {
  try {
    findRuntime()
    containersCommonProfile()
    return undefined
  } catch (er) {
    return (er as Error).message
  }
}
