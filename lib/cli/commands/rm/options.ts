/** The options of podctl rm, as commander hands them to its action. */
export interface RmOptions {
  uuidFile?: string
  all?: boolean
  force?: boolean
}
