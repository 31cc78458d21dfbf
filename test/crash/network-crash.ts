// Pods on networks under SIGKILL, through bin/podctl (CONTRACT §14), in
// full: 20 supervisors (detached, or a foreground `run`) killed at seeded
// random moments before, during and after their networks are added, then
// `gc`, and nothing of theirs left (no veth, address, rule, record or
// namespace); and 300 pods one after another on a /28, all with an
// address. test/helpers/network-crash.ts has the how; test/bin/network-crash.ts
// runs a little of it in `npm test`. PODCTL_SEED replays a schedule.
import t from 'tap'
import { containersMissing } from '../helpers/containers.js'
import { networkMissing } from '../helpers/network.js'
import { killTrials, sequentialPods } from '../helpers/network-crash.js'

const missing = networkMissing() ?? containersMissing()
if (missing !== undefined) t.plan(0, `pods on CNI networks need root, the plugins and an OCI runtime: ${missing}`)

// 300 pods of two or three seconds each on a busy machine: more than tap's 300 s.
t.setTimeout(1_800_000)

t.test('20 SIGKILLs around the network set-up, then gc: nothing left', (t) => killTrials(t, 20, Number(process.env.PODCTL_SEED ?? Date.now() % 1e9)))
t.test('300 pods one after another on a /28 all get an address', (t) => sequentialPods(t, 300))
