/** podctl image tag: another name for an image. */
import type { Command } from 'commander'
import type { Context } from '../../context.js'
import { dataDirOf } from '../../options.js'

export const registerImageTag = (image: Command, _ctx: Context): void => {
  image
    .command('tag')
    .description('give an image another name (tag "latest" when none is given); a name another image had moves to this one')
    .argument('<image>', 'NAME[:TAG], or a digest (12 or more of its hex digits)')
    .argument('<name>', 'the new NAME[:TAG]')
    .addHelpText('after', '\nExamples:\n  $ podctl image tag alpine:3 alpine:stable\n  $ podctl image tag 5a6f4a0a8cde registry.example.com/team/app:v2')
    .action(async (text: string, name: string, _opts: unknown, self: Command) => (await import('./action.js')).tag(dataDirOf(self, 'write'), text, name))
}
