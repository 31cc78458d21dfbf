/** Modes of everything podctl creates under a data dir (CONTRACT §1). */
export const DIR_MODE = 0o750
export const FILE_MODE = 0o640
