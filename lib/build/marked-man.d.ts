// marked-man ships no types: it is a marked extension object.
declare module 'marked-man' {
  const markedMan: Record<string, unknown>
  export default markedMan
}
