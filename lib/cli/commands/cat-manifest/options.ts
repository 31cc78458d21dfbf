/** The options of podctl cat-manifest, as commander hands them to its action. */
export interface CatManifestOptions {
  prettyPrint?: boolean
  /** A hidden spelling of --pretty-print. */
  pretty?: boolean
}
