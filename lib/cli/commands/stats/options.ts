/** The options of podctl stats, as commander hands them to its action. */
export interface StatsCommandOptions {
  stream?: boolean
  format: string
  legend?: boolean
  legacy?: boolean
}
