/** The options of `podctl controller`, as its action gets them (durations in ms). */
export interface ControllerCliOptions {
  workers: number
  resync: number
  exponentialBackoff: boolean
  failedProvisionThreshold: number
  failedDeleteThreshold: number
  leaderElect: boolean
  leaseDuration: number
  renewDeadline: number
  retryPeriod: number
  identity?: string
  metricsAddress?: string
  metricsPath: string
  gcInterval: number
  gcGracePeriod: number
  gcExpirePrepared: number
  once?: boolean
  logFormat: 'text' | 'json'
  provisionersDir?: string
}
