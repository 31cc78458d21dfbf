/** The options of podctl enter, as commander hands them to its action. */
export interface EnterCommandOptions {
  app?: string
  tty?: boolean
}
