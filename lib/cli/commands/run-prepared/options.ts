/** The options of podctl run-prepared, as commander hands them to its action. */
export interface RunPreparedOptions {
  detach?: boolean
  /** ms to wait for a controller to bind the pod's claims. */
  timeout?: number
  provisionersDir?: string
}
