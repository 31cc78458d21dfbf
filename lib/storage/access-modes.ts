/** Access modes of persistent volumes, by their names and Kubernetes' abbreviations. Imports nothing: the CLI's option list uses it. */
export const ACCESS_MODE_NAMES: Readonly<Record<string, 'ReadWriteOnce' | 'ReadWriteMany'>> = {
  ReadWriteOnce: 'ReadWriteOnce',
  RWO: 'ReadWriteOnce',
  ReadWriteMany: 'ReadWriteMany',
  RWX: 'ReadWriteMany',
}

/** The access mode a name (from a manifest or the command line) stands for; undefined stays undefined. */
export const accessModeOf = <T extends string | undefined>(name: T): T extends string ? 'ReadWriteOnce' | 'ReadWriteMany' : undefined =>
  (name === undefined ? undefined : ACCESS_MODE_NAMES[name]) as never

/** The access modes themselves. */
export const ACCESS_MODES: readonly ('ReadWriteOnce' | 'ReadWriteMany')[] = ['ReadWriteOnce', 'ReadWriteMany']
