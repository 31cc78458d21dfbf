/** The options of podctl logs, as commander hands them to its action. */
export interface LogsOptions {
  app?: string
  follow?: boolean
  tail?: string
  since?: string
  timestamps?: boolean
}
