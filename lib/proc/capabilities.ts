/**
 * Linux capabilities by name (capabilities(7)): the names a manifest may
 * use, the set an isolated pod's apps get by default (podman's), and the
 * set this process may hand on at all (its bounding set).
 */
import fs from 'node:fs'

/** Every capability the kernel headers of Linux 6.x name, by number. */
export const CAPABILITIES = [
  'CHOWN',
  'DAC_OVERRIDE',
  'DAC_READ_SEARCH',
  'FOWNER',
  'FSETID',
  'KILL',
  'SETGID',
  'SETUID',
  'SETPCAP',
  'LINUX_IMMUTABLE',
  'NET_BIND_SERVICE',
  'NET_BROADCAST',
  'NET_ADMIN',
  'NET_RAW',
  'IPC_LOCK',
  'IPC_OWNER',
  'SYS_MODULE',
  'SYS_RAWIO',
  'SYS_CHROOT',
  'SYS_PTRACE',
  'SYS_PACCT',
  'SYS_ADMIN',
  'SYS_BOOT',
  'SYS_NICE',
  'SYS_RESOURCE',
  'SYS_TIME',
  'SYS_TTY_CONFIG',
  'MKNOD',
  'LEASE',
  'AUDIT_WRITE',
  'AUDIT_CONTROL',
  'SETFCAP',
  'MAC_OVERRIDE',
  'MAC_ADMIN',
  'SYSLOG',
  'WAKE_ALARM',
  'BLOCK_SUSPEND',
  'AUDIT_READ',
  'PERFMON',
  'BPF',
  'CHECKPOINT_RESTORE',
] as const

export type Capability = (typeof CAPABILITIES)[number]

/** podman's default set (containers.conf `default_capabilities`), which CONTRACT §12 adopts. */
export const DEFAULT_CAPABILITIES: readonly Capability[] = [
  'CHOWN',
  'DAC_OVERRIDE',
  'FOWNER',
  'FSETID',
  'KILL',
  'NET_BIND_SERVICE',
  'SETFCAP',
  'SETGID',
  'SETPCAP',
  'SETUID',
  'SYS_CHROOT',
]

/** "cap_net_admin", "CAP_NET_ADMIN" and "net_admin" are one name; "ALL" stays "ALL". Undefined for a name the kernel lacks. */
export const capabilityName = (text: string): Capability | 'ALL' | undefined => {
  const up = text.toUpperCase()
  if (up === 'ALL') return 'ALL'
  const bare = up.startsWith('CAP_') ? up.slice(4) : up
  return (CAPABILITIES as readonly string[]).includes(bare) ? (bare as Capability) : undefined
}

/**
 * The capabilities this process holds in its bounding set: all a runtime
 * started by it can give a container (a container host may withhold some,
 * as this project's CI machines withhold SYS_RESOURCE).
 */
export const boundingSet = (status = readStatus()): Set<Capability> => {
  const hex = /^CapBnd:\s*([0-9a-f]+)$/m.exec(status)?.[1]
  const bits = hex === undefined ? 0n : BigInt(`0x${hex}`)
  return new Set(CAPABILITIES.filter((_, i) => (bits >> BigInt(i)) & 1n))
}

const readStatus = (): string => {
  try {
    return fs.readFileSync('/proc/self/status', 'utf8')
  } catch {
    return ''
  }
}

/**
 * An app's capabilities: the defaults (or every one, privileged), then
 * `drop` and `add` as podman applies them (drop ALL first, then add), kept
 * within what this process may give. Sorted, with the `CAP_` prefix the
 * OCI spec uses.
 */
export const effectiveCapabilities = (
  opts: { add?: readonly string[]; drop?: readonly string[]; privileged?: boolean },
  bounding: ReadonlySet<Capability> = boundingSet(),
): string[] => {
  const names = (list: readonly string[] | undefined): (Capability | 'ALL')[] => (list ?? []).map((n) => capabilityName(n)).filter((n) => n !== undefined)
  const set = new Set<Capability>(opts.privileged ? CAPABILITIES : DEFAULT_CAPABILITIES)
  for (const n of names(opts.drop)) {
    if (n === 'ALL') set.clear()
    else set.delete(n)
  }
  for (const n of names(opts.add)) {
    if (n === 'ALL') for (const c of CAPABILITIES) set.add(c)
    else set.add(n)
  }
  return CAPABILITIES.filter((c) => set.has(c) && bounding.has(c)).map((c) => `CAP_${c}`)
}

/**
 * Of an app's capabilities (effectiveCapabilities' answer), those its
 * `add` names (every one for ALL): what podman gives a user that is not
 * root, ambient so that they outlive its execve.
 */
export const addedCapabilities = (add: readonly string[] | undefined, capabilities: readonly string[]): string[] => {
  const named = new Set((add ?? []).map((n) => capabilityName(n)).filter((n) => n !== undefined))
  return named.has('ALL') ? [...capabilities] : capabilities.filter((c) => named.has(c.slice('CAP_'.length) as Capability))
}
