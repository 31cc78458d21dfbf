/** podctl app: mutable pods (rkt's app sandbox) and their apps. */
import type { Command } from 'commander'
import type { CommandSpec } from '../../command-spec.js'
import type { Context } from '../../context.js'
import { registerAppAdd } from './add.js'
import { registerAppList } from './list.js'
import { registerAppRm } from './rm.js'
import { registerAppSandbox } from './sandbox.js'
import { registerAppStart } from './start.js'
import { registerAppStatus } from './status.js'
import { registerAppStop } from './stop.js'

export const app: CommandSpec = {
  name: 'app',
  description: 'mutable pods: a running sandbox whose apps are added, started, stopped and removed one by one',
  define: (cmd: Command, ctx: Context): void => {
    const app = cmd
      .addHelpText(
        'after',
        `
Example:
  $ U=$(podctl app sandbox --detach)
  $ podctl app add $U --name web -- python3 -m http.server 8080
  $ podctl app start $U web
  $ podctl app list $U`,
      )
    registerAppSandbox(app, ctx)
    registerAppAdd(app, ctx)
    registerAppStart(app, ctx)
    registerAppStop(app, ctx)
    registerAppRm(app, ctx)
    registerAppList(app, ctx)
    registerAppStatus(app, ctx)
  },
}
