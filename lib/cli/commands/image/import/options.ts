/** The options of podctl image import and image pull, as commander hands them to their action. */
export interface ImageImportOptions {
  name?: string
  platform?: string
  maxSize?: string
}
