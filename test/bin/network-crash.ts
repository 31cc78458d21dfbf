// Pods on networks under SIGKILL, and many in a row on a small network,
// through bin/podctl (CONTRACT §14): npm test's share of
// test/crash/network-crash.ts (in `npm run test:stress`): 5 supervisors
// killed at seeded random moments around their network set-up, then `gc`
// and nothing of theirs left; 20 pods one after another on a /28 (13
// addresses), all with an address. PODCTL_SEED replays a schedule.
import t from 'tap'
import { containersMissing } from '../helpers/containers.js'
import { networkMissing } from '../helpers/network.js'
import { killTrials, sequentialPods } from '../helpers/network-crash.js'

const missing = networkMissing() ?? containersMissing()
if (missing !== undefined) t.plan(0, `pods on CNI networks need root, the plugins and an OCI runtime: ${missing}`)

// Data dirs of their own: both at once.
t.jobs = 2
t.test('5 SIGKILLs around the network set-up, then gc: nothing left', (t) => killTrials(t, 5, Number(process.env.PODCTL_SEED ?? Date.now() % 1e9)))
t.test('20 pods one after another on a /28 all get an address', (t) => sequentialPods(t, 20))
