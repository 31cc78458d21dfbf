/** The options of podctl stop, as commander hands them to its action. */
export interface StopOptions {
  force?: boolean
  /** ms between SIGTERM and SIGKILL. */
  timeout: number
  uuidFile?: string
}
