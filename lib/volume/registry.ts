/** The plugin registry (Kubernetes' VolumePluginMgr): plugins under unique names. */
import { PodctlError, bug } from '../errors.js'
import type { VolumePlugin, VolumeSpec } from './types.js'

export class PluginRegistry {
  readonly #plugins = new Map<string, VolumePlugin>()

  constructor(plugins: VolumePlugin[] = []) {
    for (const p of plugins) this.register(p)
  }

  /** Adds a plugin; a second plugin with the same name is a bug. */
  register(plugin: VolumePlugin): void {
    if (this.#plugins.has(plugin.name)) throw bug(`volume plugin ${plugin.name} registered twice`)
    this.#plugins.set(plugin.name, plugin)
  }

  get names(): string[] {
    return [...this.#plugins.keys()]
  }

  /** The one plugin that supports `spec`; none or several is an error naming them. */
  findPluginBySpec(spec: VolumeSpec): VolumePlugin {
    const found = [...this.#plugins.values()].filter((p) => p.canSupport(spec))
    if (found.length === 1) return found[0]!
    if (found.length === 0) {
      throw new PodctlError('EFAILED', `no volume plugin supports volume "${spec.name}" (kind ${JSON.stringify(spec.volume.kind)}); plugins: ${this.names.join(', ') || 'none'}`)
    }
    throw new PodctlError('EFAILED', `volume "${spec.name}" is supported by more than one plugin: ${found.map((p) => p.name).join(', ')}`)
  }

  /** The plugin registered as `name` (as recorded in a volume's actual state). */
  findPluginByName(name: string): VolumePlugin {
    const p = this.#plugins.get(name)
    if (!p) throw new PodctlError('EFAILED', `no volume plugin named ${JSON.stringify(name)}; plugins: ${this.names.join(', ') || 'none'}`)
    return p
  }
}
