/** The options of podctl status, as commander hands them to its action. */
export interface StatusOptions {
  format: string
  /** true, or the duration text (or the pod: see the action). */
  wait?: true | string
  waitReady?: true | string
  /** rkt's --uuid-file: the pod whose UUID is in this file. */
  uuidFile?: string
}
