// ProvisionController's stop (lib/controller/controller.ts), through its
// LeaderElection interface with an election that answers when the test
// says: a controller stopped while a try to take the lead is in flight
// gives up the lead that try then takes, a standby's first try too, so
// that another controller need not wait for the lease to expire.
import t from 'tap'
import { ProvisionController } from '../../lib/controller/controller.js'
import type { LeaderElection } from '../../lib/election/election.js'
import { pollUntil } from '../helpers/common.js'

/** An election whose tries wait for `answer`; what was asked of it, in order. */
const heldElection = () => {
  const calls: string[] = []
  let answer: (lead: boolean) => void = () => {}
  const election: LeaderElection = {
    what: 'the test lease',
    tryAcquireOrRenew: () => {
      calls.push('try')
      return new Promise<boolean>((resolve) => (answer = resolve))
    },
    release: async () => void calls.push('release'),
    stepDown: () => void calls.push('stepDown'),
  }
  return { election, calls, answer: (lead: boolean) => answer(lead) }
}

for (const [lead, want] of [
  [true, ['try', 'release']],
  [false, ['try']],
] as const) {
  t.test(`stopped while its first try is in flight, which then ${lead ? 'takes the lead: released' : 'does not: nothing to release'}`, async (t) => {
    const e = heldElection()
    const log: string[] = []
    const c = new ProvisionController(t.testdir({}), null, null, { election: e.election, gcInterval: 0, log: (line) => log.push(line) })
    const stop = new AbortController()
    const done = c.run(stop.signal)
    await pollUntil('the first try', () => e.calls.length > 0, { intervalMs: 5 })
    stop.abort()
    setTimeout(() => e.answer(lead), 20)
    await done
    t.same(e.calls, want, 'what the election was asked')
    if (lead) t.match(log, [/^leading/, /^released the test lease/, /^not leading/], 'the log says so')
  })
}
