/**
 * Shell completion. The scripts `podctl completion bash|zsh|fish` prints
 * are small: each asks `podctl __complete -- WORD...` for the candidates of
 * the last word, so what is completed comes from the command tree itself
 * (commands, aliases, options, their choices) and from the data dir (pod
 * UUIDs, app names), and never goes stale.
 */
import type { Command, Option } from 'commander'
import fs from 'node:fs'
import path from 'node:path'
import { resolveDataDir } from '../pod/layout.js'
import { POD_STATES } from '../pod/state.js'
import { Include, listPods } from '../pod/walk.js'

/** The words a shell gives, with bash's "=" split undone: `--format`, `=`, `js` is `--format=js`. */
const joinEquals = (words: string[]): string[] => {
  const out: string[] = []
  for (let i = 0; i < words.length; i++) {
    if (words[i] === '=' && out.length > 0 && out[out.length - 1]!.startsWith('--')) {
      out[out.length - 1] += `=${words[i + 1] ?? ''}`
      i++
    } else out.push(words[i]!)
  }
  return out
}

const optionsOf = (cmd: Command): Option[] => {
  const all: Option[] = []
  for (let c: Command | null = cmd; c; c = c.parent) all.push(...c.options.filter((o) => !o.hidden))
  return all
}

const findOption = (cmd: Command, flag: string): Option | undefined => {
  for (let c: Command | null = cmd; c; c = c.parent) {
    const o = c.options.find((x) => x.long === flag || x.short === flag)
    if (o) return o
  }
  return undefined
}

const podUUIDs = (dataDir: string): string[] => {
  try {
    return listPods(dataDir, Include.all).map((p) => {
      p.close()
      return p.uuid
    })
  } catch {
    return [] // no data dir, or one podctl would refuse: nothing to offer
  }
}

const appNames = (dataDir: string, uuidPrefix: string | undefined): string[] => {
  if (uuidPrefix === undefined) return []
  try {
    const pod = listPods(dataDir, Include.all).find((p) => p.uuid.startsWith(uuidPrefix))
    return pod ? pod.record().apps.map((a) => a.name) : []
  } catch {
    return []
  }
}

/** What a value of `option` may be. */
const valuesOf = (option: Option, dataDir: () => string, positional: string[]): string[] => {
  if (option.argChoices) return option.argChoices
  switch (option.long) {
    case '--state':
      return [...POD_STATES].map((s) => s.replace(/ /g, '-'))
    case '--filter':
      return [...POD_STATES.map((s) => `state=${s.replace(/ /g, '-')}`), 'name=', 'app=']
    case '--app':
      return appNames(dataDir(), positional[0])
    case '--network':
      return ['host', 'none', ...networkNames(dataDir())]
    default:
      return [] // a path or free text: the shell's own completion
  }
}

/**
 * The networks a command may name: the data dir's (file names), the
 * default one, and the operator's (the names in the config dir's files).
 * Read here rather than through lib/network, whose code every command's
 * completion would then load.
 */
const networkNames = (dataDir: string): string[] => {
  const names = ['bridge']
  const list = (dir: string): string[] => {
    try {
      return fs.readdirSync(dir)
    } catch {
      return []
    }
  }
  for (const f of list(path.join(dataDir, 'networks'))) if (f.endsWith('.conflist') && !f.startsWith('.')) names.push(f.slice(0, -'.conflist'.length))
  const conf = process.env.PODCTL_CNI_CONFIG_DIR || '/etc/cni/net.d'
  for (const f of list(conf).filter((n) => /\.(conflist|conf|json)$/.test(n))) {
    try {
      const name = (JSON.parse(fs.readFileSync(path.join(conf, f), 'utf8').slice(0, 1 << 20)) as { name?: unknown }).name
      if (typeof name === 'string') names.push(name)
    } catch {
      // not a conflist
    }
  }
  return names
}

/** Commands whose arguments are networks (network inspect, rm). */
const takesNetwork = (cmd: Command): boolean => cmd.registeredArguments.length > 0 && /^network/.test(cmd.registeredArguments[0]!.name())

/** Commands whose first argument is a pod. */
const takesPod = (cmd: Command): boolean => cmd.registeredArguments.length > 0 && /^uuid/.test(cmd.registeredArguments[0]!.name())

/**
 * The candidates for the last of `words` (the words after `podctl`, the
 * last one being completed, possibly empty). `define` adds the rest of a
 * command's definition, as dispatching to it would.
 */
export const complete = (program: Command, define: (cmd: Command) => void, rawWords: string[]): string[] => {
  // bash, cursor right after "--format=": the word being completed is "=" itself, and the candidates replace it.
  if (rawWords.length >= 2 && rawWords.at(-1) === '=') return complete(program, define, [...rawWords, '']).map((v) => `=${v}`)
  const words = joinEquals(rawWords)
  const current = words.pop() ?? ''
  let cmd = program
  let expecting: Option | undefined
  let afterDashes = false
  let dir: string | undefined
  const positional: string[] = []
  for (const w of words) {
    if (afterDashes) continue
    if (expecting) {
      if (expecting.long === '--dir') dir = w
      expecting = undefined
      continue
    }
    if (w === '--') {
      afterDashes = true
      continue
    }
    if (w.startsWith('-')) {
      const [flag, value] = w.includes('=') ? [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)] : [w, undefined]
      const o = findOption(cmd, flag!)
      if (o?.long === '--dir' && value !== undefined) dir = value
      if (o && (o.required || o.optional) && value === undefined && o.required) expecting = o
      continue
    }
    const sub = cmd.commands.find((c) => c.name() === w || c.aliases().includes(w))
    if (sub && positional.length === 0) {
      define(sub)
      cmd = sub
    } else positional.push(w)
  }
  if (afterDashes) return []
  const dataDir = (): string => resolveDataDir(dir)
  const matching = (xs: readonly string[], prefix = current): string[] => [...new Set(xs)].filter((x) => x.startsWith(prefix))
  if (expecting) return matching(valuesOf(expecting, dataDir, positional))
  if (current.startsWith('--') && current.includes('=')) {
    const flag = current.slice(0, current.indexOf('='))
    const o = findOption(cmd, flag)
    // bash completes the part after "=" (it split the word there); zsh and fish the whole word.
    const values = o ? valuesOf(o, dataDir, positional) : []
    return rawWords.includes('=') ? matching(values, current.slice(flag.length + 1)) : matching(values.map((v) => `${flag}=${v}`))
  }
  if (current.startsWith('-')) return matching(optionsOf(cmd).flatMap((o) => [o.long, o.short].filter((x): x is string => x !== undefined)))
  const subs = cmd.commands.filter((c) => !(c as unknown as { _hidden?: boolean })._hidden).flatMap((c) => [c.name(), ...c.aliases()])
  const pods = takesPod(cmd) && positional.length === 0 ? podUUIDs(dataDir()) : []
  const networks = takesNetwork(cmd) && (positional.length === 0 || cmd.registeredArguments[0]!.variadic) ? networkNames(dataDir()) : []
  return matching([...subs, ...pods, ...networks])
}

/** The script each shell sources; each one asks `podctl __complete` for the candidates. */
export const completionScript = (shell: 'bash' | 'zsh' | 'fish'): string => {
  switch (shell) {
    case 'bash':
      return `# podctl completion for bash: source it, or put it in ~/.local/share/bash-completion/completions/podctl
_podctl() {
  local IFS=$'\\n'
  COMPREPLY=($(podctl __complete -- "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _podctl podctl
`
    case 'zsh':
      return `# podctl completion for zsh: source it from ~/.zshrc
autoload -U +X bashcompinit && bashcompinit
_podctl() {
  local IFS=$'\\n'
  COMPREPLY=($(podctl __complete -- "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _podctl podctl
`
    case 'fish':
      return `# podctl completion for fish: save as ~/.config/fish/completions/podctl.fish
complete -c podctl -f -a '(podctl __complete -- (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)'
`
  }
}
