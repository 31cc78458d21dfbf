/** The built-in volume plugins, registered once per process. */
import { PluginRegistry } from '../registry.js'
import { emptyPlugin } from './empty.js'
import { filesPlugin } from './files.js'
import { hostPlugin } from './host.js'
import { persistentPlugin } from './persistent.js'

export const builtinPlugins = [emptyPlugin, hostPlugin, filesPlugin, persistentPlugin]

let registry: PluginRegistry | undefined
/** The registry of the built-in plugins. */
export const defaultRegistry = (): PluginRegistry => (registry ??= new PluginRegistry(builtinPlugins))
