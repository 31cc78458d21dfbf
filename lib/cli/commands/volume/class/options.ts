/** The options of `podctl volume class create`, as its action gets them. */
export interface ClassCreateOptions {
  provisioner: string
  param?: string[]
  reclaim: 'delete' | 'retain' | 'recycle'
  default?: boolean
  format: string
}
