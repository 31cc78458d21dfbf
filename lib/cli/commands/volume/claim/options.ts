/** The options of `podctl volume claim create`, as its action gets them. */
export interface ClaimCreateOptions {
  class?: string
  size?: string
  accessMode: string
  format: string
}
