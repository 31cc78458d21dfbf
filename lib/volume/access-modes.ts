/** Access modes of persistent volumes, by their names and Kubernetes' abbreviations. Imports nothing: the CLI's option list uses it. */
export const ACCESS_MODE_NAMES: Readonly<Record<string, 'ReadWriteOnce' | 'ReadWriteMany'>> = {
  ReadWriteOnce: 'ReadWriteOnce',
  RWO: 'ReadWriteOnce',
  ReadWriteMany: 'ReadWriteMany',
  RWX: 'ReadWriteMany',
}
