/**
 * Node opens its inspector on SIGUSR1 (a debugger on 127.0.0.1:9229 that
 * runs whatever code a client sends it, as this process's user) unless the
 * process listens for the signal itself. podctl runs as root, and any local
 * user can connect to that port: so every podctl process listens for it.
 */
export const keepInspectorClosed = (): void => {
  if (process.listenerCount('SIGUSR1') === 0) process.on('SIGUSR1', () => {})
}
