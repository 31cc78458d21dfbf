/** The options of podctl gc, as commander hands them to its action (durations in ms). */
export interface GcCliOptions {
  gracePeriod: number
  expirePrepared: number
  markOnly?: boolean
  workers: number
  format: string
}
