// Capabilities by name (lib/proc/capabilities.ts, CONTRACT §12): the names a
// manifest may use, podman's default set, drop and add as podman applies
// them, and the bounding set of this process as the ceiling.
import t from 'tap'
import { CAPABILITIES, DEFAULT_CAPABILITIES, boundingSet, capabilityName, effectiveCapabilities } from '../../lib/proc/capabilities.js'

const ALL = new Set(CAPABILITIES)
const DEFAULTS = ['CAP_CHOWN', 'CAP_DAC_OVERRIDE', 'CAP_FOWNER', 'CAP_FSETID', 'CAP_KILL', 'CAP_SETGID', 'CAP_SETUID', 'CAP_SETPCAP', 'CAP_NET_BIND_SERVICE', 'CAP_SYS_CHROOT', 'CAP_SETFCAP']

t.test('capabilityName: capabilities(7) names with or without CAP_, any case; ALL', async (t) => {
  for (const n of ['NET_ADMIN', 'CAP_NET_ADMIN', 'cap_net_admin', 'net_admin', 'Cap_Net_Admin']) t.equal(capabilityName(n), 'NET_ADMIN', n)
  t.equal(capabilityName('ALL'), 'ALL')
  t.equal(capabilityName('all'), 'ALL')
  t.equal(capabilityName('CAP_ALL'), undefined, 'CAP_ALL is not a name')
  for (const n of ['', 'CAP_', 'NET_ADMINS', 'CAP_NOPE', 'cap net_admin', ' NET_ADMIN']) t.equal(capabilityName(n), undefined, JSON.stringify(n))
  t.equal(capabilityName('CHECKPOINT_RESTORE'), 'CHECKPOINT_RESTORE', 'the last one, 40')
  t.equal(CAPABILITIES.indexOf('SYS_ADMIN'), 21, 'numbered as the kernel numbers them')
  t.equal(CAPABILITIES.length, 41)
})

t.test("effectiveCapabilities: podman's defaults, then drop, then add, within the bounding set", async (t) => {
  t.strictSame(effectiveCapabilities({}, ALL), DEFAULTS, "podman's eleven, CAP_ prefixed, in the kernel's order")
  t.strictSame(DEFAULT_CAPABILITIES.length, 11)
  t.strictSame(effectiveCapabilities({ add: ['NET_ADMIN'], drop: ['CHOWN'] }, ALL), ['CAP_DAC_OVERRIDE', 'CAP_FOWNER', 'CAP_FSETID', 'CAP_KILL', 'CAP_SETGID', 'CAP_SETUID', 'CAP_SETPCAP', 'CAP_NET_BIND_SERVICE', 'CAP_NET_ADMIN', 'CAP_SYS_CHROOT', 'CAP_SETFCAP'], 'add NET_ADMIN, drop CHOWN')
  t.strictSame(effectiveCapabilities({ drop: ['ALL'] }, ALL), [], 'drop ALL: none')
  t.strictSame(effectiveCapabilities({ drop: ['ALL'], add: ['cap_net_bind_service'] }, ALL), ['CAP_NET_BIND_SERVICE'], 'drop ALL then add one: that one (the order of podman, whatever the order written)')
  t.strictSame(effectiveCapabilities({ add: ['CHOWN'], drop: ['CHOWN'] }, ALL), DEFAULTS, 'a name both dropped and added: added, since add comes last')
  t.strictSame(effectiveCapabilities({ add: ['ALL'] }, ALL), CAPABILITIES.map((c) => `CAP_${c}`), 'add ALL: every one')
  t.strictSame(effectiveCapabilities({ privileged: true }, ALL), CAPABILITIES.map((c) => `CAP_${c}`), 'privileged: every one')
  t.strictSame(effectiveCapabilities({ privileged: true, drop: ['SYS_ADMIN'] }, ALL).includes('CAP_SYS_ADMIN'), false, 'privileged less one')
  t.strictSame(effectiveCapabilities({ add: ['NOPE'] }, ALL), DEFAULTS, 'an unknown name (refused at prepare) changes nothing here')
})

t.test('the bounding set is the ceiling: what this process cannot give is left out', async (t) => {
  const noSysResource = new Set(CAPABILITIES.filter((c) => c !== 'SYS_RESOURCE' && c !== 'NET_ADMIN'))
  t.notOk(effectiveCapabilities({ add: ['NET_ADMIN'] }, noSysResource).includes('CAP_NET_ADMIN'), 'an added capability outside the bounding set is left out')
  t.notOk(effectiveCapabilities({ privileged: true }, noSysResource).includes('CAP_SYS_RESOURCE'), 'privileged: every one the bounding set has')
  t.equal(effectiveCapabilities({ privileged: true }, noSysResource).length, CAPABILITIES.length - 2)
  t.strictSame(effectiveCapabilities({}, new Set(['CHOWN', 'KILL'] as const)), ['CAP_CHOWN', 'CAP_KILL'], 'even the defaults')
})

t.test('boundingSet: from /proc/self/status', async (t) => {
  const set = boundingSet('Name:\tnode\nCapBnd:\t000001fffeffffff\nCapAmb:\t0000000000000000\n')
  t.equal(set.size, 40, '000001fffeffffff: 41 capabilities less one')
  t.notOk(set.has('SYS_RESOURCE'), 'bit 24, SYS_RESOURCE, is the one clear')
  t.ok(set.has('CHECKPOINT_RESTORE') && set.has('CHOWN'))
  t.strictSame([...boundingSet('CapBnd:\t0000000000000003\n')].sort(), ['CHOWN', 'DAC_OVERRIDE'])
  t.equal(boundingSet('no such line\n').size, 0, 'no CapBnd line: nothing can be given')
  t.ok(boundingSet().size > 0, 'this process has a bounding set')
})
