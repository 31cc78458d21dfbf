// The pod's part of the manifest validator (CONTRACT §3, lib/pod/manifest.ts):
// every rule with the exact field path and message. The volume rules and
// the property tests of the whole validator are in test/volume/manifest.ts.
import t from 'tap'
import { AppTypeMask, MAX_MANIFEST_BYTES, appType, manifestProblems, parseManifest, validateManifest, visitApps, type PodManifest } from '../../lib/pod/manifest.js'
import { app, man, manifestChecks, V, vol, withVolume } from '../helpers/manifest-checks.js'

const { problems, ok } = manifestChecks(manifestProblems, validateManifest)

t.test('valid manifests', async (t) => {
  ok(t, man(), 'the minimum')
  ok(
    t,
    {
      apiVersion: V,
      name: 'web',
      labels: { team: 'infra' },
      annotations: { note: 'free text' },
      mutable: false,
      apps: [
        { name: 'migrate', type: 'init', exec: ['/bin/sh', '-c', 'echo migrating'], env: { KEY: 'value', _k1: '' }, workingDirectory: '/' },
        { name: 'web', type: 'regular', exec: ['sleep', '60', ''], mounts: [{ volume: 'data', path: '/var/lib/data', readOnly: false }] },
      ],
      volumes: [
        { name: 'data', kind: 'empty' },
        { name: 'etc', kind: 'host', source: '/etc', readOnly: true },
        { name: 'cfg', kind: 'files', files: { 'a.txt': { content: 'x', mode: 0o644 }, 'dir/b.txt': { content: '' }, '.hidden': { content: 'y' } } },
        { name: 'db', kind: 'persistent', claim: 'db-1', readOnly: false, accessMode: 'ReadWriteMany' },
      ],
    },
    'CONTRACT §3 example with every kind of volume',
  )
  ok(t, man({ mutable: true, apps: [] }), 'a mutable pod may have no apps')
  ok(t, man({ name: 'a' }), 'one-character name')
  ok(t, man({ name: `a${'b'.repeat(62)}` }), '63 characters')
  ok(t, man({ name: '0-a-' }), 'digits and hyphens')
})

t.test('not an object', async (t) => {
  for (const [v, d] of [
    [null, 'null'],
    [[], 'an array'],
    ['x', 'string "x"'],
    [1, 'number 1'],
    [true, 'boolean true'],
  ] as const) {
    problems(t, v, [['(top level)', `a manifest must be a JSON object, not ${d}`]], d)
  }
})

t.test('unknown fields are errors at every level', async (t) => {
  problems(t, man({ extra: 1 }), [['extra', 'unknown field (allowed: apiVersion, name, labels, annotations, mutable, isolation, network, networks, ports, dns, dnsSearch, dnsOptions, addHosts, userns, resources, hostname, autoRemove, httpProxy, apps, volumes)']], 'top level')
  problems(t, man({ 'a b': 1 }), [['["a b"]', /^unknown field/]], 'a key that is not an identifier is quoted')
  problems(t, man({ apps: [app({ restart: 'always' })] }), [['apps[0].restart', 'unknown field (allowed: name, type, image, entrypoint, exec, env, workingDirectory, mounts, user, group, stopSignal, stdin, tty, capabilities, readOnlyRootFilesystem, seccomp, privileged, resources)']], 'app')
  problems(
    t,
    man({ volumes: [vol({ kind: 'empty' })], apps: [app({ mounts: [{ volume: 'data', path: '/d', rw: true }] })] }),
    [['apps[0].mounts[0].rw', 'unknown field (allowed: volume, path, readOnly)']],
    'mount',
  )
})

t.test('apiVersion', async (t) => {
  problems(t, man({ apiVersion: 'podctl/v2' }), [['apiVersion', 'must be "podctl/v1", not string "podctl/v2"']])
  problems(t, man({ apiVersion: 1 }), [['apiVersion', 'must be "podctl/v1", not number 1']])
  const { apiVersion: _, ...rest } = man()
  problems(t, rest, [['apiVersion', /^must be "podctl\/v1"/]], 'missing')
})

t.test('a missing field is called missing', async (t) => {
  // "not undefined undefined" tells the user nothing.
  const { apiVersion: _, ...noVersion } = man()
  const cases: Array<[string, unknown]> = [
    ['apiVersion', noVersion],
    ['apps', { apiVersion: V }],
    ['apps[0].name', man({ apps: [{ exec: ['x'] }] })],
    ['volumes[0].name', man({ volumes: [{ kind: 'host' }] })],
  ]
  for (const [field, m] of cases) {
    const p = manifestProblems(m).find((x) => x.path === field)
    t.ok(p, `${field} is reported`)
    t.notMatch(p?.problem ?? '', /undefined undefined/, `${field}: the problem does not read "not undefined undefined"`)
  }
})

t.test('pod name syntax', async (t) => {
  const rule = 'must be 1 to 63 characters of a-z, 0-9 and "-", starting with a letter or digit'
  for (const bad of ['', 'Web', '-web', 'web_1', 'a.b', 'é', `a${'b'.repeat(63)}`, ' web']) {
    problems(t, man({ name: bad }), [['name', `${JSON.stringify(bad)} ${rule}`]], JSON.stringify(bad))
  }
  problems(t, man({ name: 5 }), [['name', 'must be a string, not number 5']])
  problems(t, man({ name: 'a\0b' }), [['name', 'must not contain a NUL character']])
})

t.test('labels and annotations are string maps', async (t) => {
  for (const field of ['labels', 'annotations']) {
    problems(t, man({ [field]: [] }), [[field, 'must be an object of strings, not an array']], `${field}: an array`)
    problems(t, man({ [field]: 'x' }), [[field, 'must be an object of strings, not string "x"']], `${field}: a string`)
    problems(t, man({ [field]: null }), [[field, 'must be an object of strings, not null']], `${field}: null`)
    problems(t, man({ [field]: { team: 1 } }), [[`${field}.team`, 'must be a string, not number 1']], `${field}: a number value`)
    problems(t, man({ [field]: { 'a/b': {} } }), [[`${field}["a/b"]`, 'must be a string, not an object']], `${field}: an object value, quoted key`)
    problems(t, man({ [field]: { '': 'x' } }), [[field, 'has an empty or invalid key ""']], `${field}: an empty key`)
  }
})

t.test('mutable', async (t) => {
  problems(t, man({ mutable: 'yes' }), [['mutable', 'must be true or false, not string "yes"']])
})

t.test('isolation and network (CONTRACT §9, §14)', async (t) => {
  for (const isolation of ['host', 'namespaces']) ok(t, man({ isolation }), isolation)
  ok(t, man({ isolation: 'namespaces', network: 'none' }), 'namespaces with network none')
  ok(t, man({ isolation: 'namespaces', network: 'host' }), 'namespaces with the host network')
  ok(t, man({ isolation: 'namespaces', network: 'bridge' }), 'the default network')
  ok(t, man({ isolation: 'namespaces', network: 'Front_1.a-b' }), "a network's name, as podman's and CNI's allow it")
  ok(t, man({ apps: [app({ image: 'alpine' })], network: 'front' }), 'an image app implies namespaces')
  ok(t, man({ network: 'host' }), 'host processes on the host network')
  problems(t, man({ isolation: 'vm' }), [['isolation', 'must be "host" or "namespaces", not string "vm"']])
  problems(t, man({ isolation: true }), [['isolation', 'must be "host" or "namespaces", not boolean true']])
  problems(t, man({ isolation: 'namespaces', network: 'a b' }), [['network', 'must be "host", "none", "bridge" or the name of a network, not string "a b"']])
  problems(t, man({ isolation: 'namespaces', network: 7 }), [['network', 'must be "host", "none", "bridge" or the name of a network, not number 7']])
  problems(t, man({ network: 'none' }), [['network', '"none" needs "isolation": "namespaces" (host processes have the host\'s network)']], 'network none without namespaces')
  problems(t, man({ isolation: 'host', network: 'none' }), [['network', '"none" needs "isolation": "namespaces" (host processes have the host\'s network)']], 'network none with host isolation')
  problems(t, man({ network: 'bridge' }), [['network', '"bridge" needs "isolation": "namespaces" (host processes have the host\'s network)']], 'a network of host processes')
})

t.test('networks: several, in the place of network (CONTRACT §14)', async (t) => {
  const iso = (over: Record<string, unknown>): Record<string, unknown> => man({ isolation: 'namespaces', ...over })
  ok(t, iso({ networks: ['bridge', 'front'] }))
  ok(t, iso({ networks: ['front'] }), 'one is a list too')
  problems(t, iso({ network: 'bridge', networks: ['front'] }), [['networks', 'give "network" or "networks", not both']])
  problems(t, iso({ networks: [] }), [['networks', 'must be a non-empty array of network names ("bridge", or a network\'s), not an empty array']])
  problems(t, iso({ networks: 'front' }), [['networks', 'must be a non-empty array of network names ("bridge", or a network\'s), not string "front"']])
  problems(
    t,
    iso({ networks: ['front', 'host', 'none', 'a b', null, 'front'] }),
    [
      ['networks[1]', '"host" is not a network to join beside others: give "network": "host" alone'],
      ['networks[2]', '"none" is not a network to join beside others: give "network": "none" alone'],
      ['networks[3]', 'must be "bridge" or the name of a network, not string "a b"'],
      ['networks[4]', 'must be "bridge" or the name of a network, not null'],
      ['networks[5]', '"front" is named twice'],
    ],
    'each entry is named',
  )
  problems(t, man({ networks: ['front'] }), [['networks', 'needs "isolation": "namespaces" (host processes have the host\'s network)']], 'host processes')
})

t.test('ports, dns, dnsSearch, dnsOptions, addHosts (CONTRACT §14)', async (t) => {
  const iso = (over: Record<string, unknown>): Record<string, unknown> => man({ isolation: 'namespaces', ...over })
  const all = {
    ports: [{ hostPort: 8080, containerPort: 80 }, { hostPort: 8080, containerPort: 80, protocol: 'udp', hostIP: '10.0.0.1' }, { hostPort: 8443, containerPort: 443, hostIP: '::1' }, { hostPort: 9, containerPort: 9, hostIP: '' }],
    dns: ['1.1.1.1', '2606:4700::1111'],
    dnsSearch: ['example.com', '.'],
    dnsOptions: ['ndots:2', 'edns0'],
    addHosts: ['db:10.0.0.5', 'db6:fd00::5'],
  }
  ok(t, iso(all), 'every field, on the default network')
  ok(t, iso({ ...all, networks: ['bridge', 'front'] }), 'on several networks')
  ok(t, man({ apps: [app({ image: 'alpine' })], ...all }), 'an image pod')
  problems(
    t,
    iso({ ports: [{ hostPort: 0, containerPort: 80, protocol: 'sctp', hostIP: 'x', extra: 1 }, 'p', { hostPort: 9, containerPort: 9 }, { hostPort: 9, containerPort: 10, hostIP: '10.0.0.1' }, { hostPort: '9', containerPort: 65536 }] }),
    [
      ['ports[0].extra', 'unknown field (allowed: hostPort, containerPort, protocol, hostIP)'],
      ['ports[0].hostPort', 'must be a port, 1 to 65535, not number 0'],
      ['ports[0].protocol', 'must be "tcp" or "udp", not string "sctp"'],
      ['ports[0].hostIP', 'must be an IP address of the host, or "" for all, not string "x"'],
      ['ports[1]', 'must be an object, not string "p"'],
      ['ports[3].hostPort', 'host port 10.0.0.1:9/tcp is published twice'],
      ['ports[4].hostPort', 'must be a port, 1 to 65535, not string "9"'],
      ['ports[4].containerPort', 'must be a port, 1 to 65535, not number 65536'],
    ],
    'ports',
  )
  problems(t, iso({ ports: [{ hostPort: 53, containerPort: 53, hostIP: '0.0.0.0' }, { hostPort: 53, containerPort: 53, hostIP: '127.0.0.1' }] }), [['ports[1].hostPort', 'host port 127.0.0.1:53/tcp is published twice']], '0.0.0.0 is every address')
  problems(t, iso({ ports: {} }), [['ports', 'must be an array of {"hostPort", "containerPort", "protocol", "hostIP"}, not an object']])
  problems(
    t,
    iso({ dns: ['1.1.1.1', 'dns.example', 5], dnsSearch: ['a b', 'ok.example'], dnsOptions: ['ndots:2', 'x y'], addHosts: ['db', 'a b:1.2.3.4', 'db:zz', 'ok:1.2.3.4'] }),
    [
      ['dns[1]', '"dns.example" is not an IP address'],
      ['dns[2]', 'must be a string, not number 5'],
      ['dnsSearch[0]', '"a b" is not a domain (letters, digits and "-" in labels joined by "."; "." for none)'],
      ['dnsOptions[1]', '"x y" is not a resolver option (one word such as "ndots:2" or "edns0", without "#" or ";")'],
      ['addHosts[0]', 'must be NAME:IP'],
      ['addHosts[1]', '"a b" is not a host name (letters, digits, "_" and "-" in labels joined by ".")'],
      ['addHosts[2]', '"zz" is not an IP address'],
    ],
    'the lists',
  )
  problems(
    t,
    iso({ dns: '1.1.1.1', dnsSearch: null, dnsOptions: {}, addHosts: 'db:1.2.3.4' }),
    [
      ['dns', 'must be an array of IP addresses, not string "1.1.1.1"'],
      ['dnsSearch', 'must be an array of domains, not null'],
      ['dnsOptions', 'must be an array of resolver options, not an object'],
      ['addHosts', 'must be an array of "NAME:IP" entries, not string "db:1.2.3.4"'],
    ],
  )
  const own = (n: string): string => `needs a network of the pod's own ("bridge" or a network's name), not "network": "${n}"`
  for (const network of ['host', 'none']) {
    problems(
      t,
      iso({ network, ...all }),
      ['ports', 'dns', 'dnsSearch', 'dnsOptions', 'addHosts'].map((f) => [f, own(network)] as [string, string]),
      `each field needs a network of the pod's own: not ${network}`,
    )
  }
  const host = "needs \"isolation\": \"namespaces\" (host processes have the host's network)"
  problems(t, man(all), ['ports', 'dns', 'dnsSearch', 'dnsOptions', 'addHosts'].map((f) => [f, host] as [string, string]), 'nor a pod of host processes')
  problems(t, man({ ports: [{ hostPort: 1, containerPort: 1 }], network: 'host' }), [['ports', host]], 'host processes on the host network')
})

t.test('with namespaces, each app has its own mounts: two apps may mount two volumes at one path', async (t) => {
  ok(t, man({ isolation: 'namespaces', volumes: [vol({ name: 'x' }), vol({ name: 'y' })], apps: [app({ name: 'a', mounts: [{ volume: 'x', path: '/d' }] }), app({ name: 'b', mounts: [{ volume: 'y', path: '/d', readOnly: true }] })] }))
})

t.test('containers (CONTRACT §12): resources, capabilities, seccomp, privileged, userns', async (t) => {
  const iso = (over: Record<string, unknown>, appOver: Record<string, unknown> = {}): Record<string, unknown> => man({ isolation: 'namespaces', apps: [app(appOver)], ...over })
  ok(t, iso({ resources: { memory: '256Mi', cpu: '0.5', pids: 64 } }), 'pod resources')
  ok(t, iso({}, { resources: { memory: 67108864, cpu: 2 } }), 'app resources as numbers')
  ok(t, iso({ resources: { memory: '64m' } }), "podman's 64m")
  ok(t, iso({ userns: 'private' }), 'userns private')
  ok(t, iso({}, { capabilities: { add: ['NET_ADMIN', 'cap_sys_time'], drop: ['ALL'] }, readOnlyRootFilesystem: true, seccomp: 'unconfined', privileged: false }), 'app security fields')
  ok(t, iso({}, { seccomp: '/etc/podctl/seccomp.json' }), 'a seccomp profile path')
  problems(t, iso({ resources: { memory: '1Mi' } }), [['resources.memory', '"1Mi" is below the smallest limit, 6Mi']])
  problems(t, iso({ resources: { memory: 'lots' } }), [['resources.memory', 'must be a size such as "256Mi" or "1G", not string "lots"']])
  problems(t, iso({ resources: { cpu: '-1' } }), [['resources.cpu', 'must be a number of cores such as "0.5" or "2", not string "-1"']])
  problems(t, iso({ resources: { cpu: 0.001 } }), [['resources.cpu', '0.001 is below the smallest share, 0.01 of a core']])
  ok(t, iso({ resources: { pids: 0 } }), 'pids 0 is no limit, as podman\'s --pids-limit 0')
  problems(t, iso({ resources: { pids: -1 } }), [['resources.pids', 'must be a whole number, 0 for no limit, not number -1']])
  problems(t, iso({ resources: { pids: 4 } }), [['resources.pids', '4 is below the smallest limit, 8: the runtime needs a few processes of its own to start an app']])
  problems(t, iso({ resources: { disk: '1G' } }), [['resources.disk', 'unknown field (allowed: memory, cpu, pids)']])
  problems(t, iso({ userns: 'auto' }), [['userns', 'must be "host" or "private", not string "auto"']])
  problems(t, iso({}, { capabilities: { add: ['NET_MAGIC'] } }), [['apps[0].capabilities.add[0]', /^"NET_MAGIC" is not a capability/]], 'an unknown capability')
  problems(t, iso({}, { capabilities: { add: 'NET_ADMIN' } }), [['apps[0].capabilities.add', 'must be an array of capability names, not string "NET_ADMIN"']])
  problems(t, iso({}, { seccomp: 'relative.json' }), [['apps[0].seccomp', '"relative.json" must be an absolute path']])
  problems(t, iso({}, { privileged: 'yes' }), [['apps[0].privileged', 'must be true or false, not string "yes"']])
  const needs = 'needs "isolation": "namespaces" (host processes have no cgroups, capabilities or seccomp of their own)'
  problems(t, man({ resources: { memory: '64Mi' } }), [['resources', needs]], 'resources of a host pod')
  problems(t, man({ userns: 'private' }), [['userns', needs]], 'userns of a host pod')
  problems(t, man({ apps: [app({ privileged: true, seccomp: 'default' })] }), [['apps[0].seccomp', needs], ['apps[0].privileged', needs]], 'app fields of a host pod')
})

t.test("CONTRACT §15: the pod's hostname, autoRemove (--rm), httpProxy (--http-proxy)", async (t) => {
  const iso = (over: Record<string, unknown>): Record<string, unknown> => man({ isolation: 'namespaces', ...over })
  ok(t, iso({ hostname: 'web' }), 'a hostname')
  ok(t, iso({ hostname: 'web-1.example.com' }), 'a dotted hostname')
  ok(t, iso({ hostname: 'a'.repeat(63) }), 'a label of 63')
  ok(t, man({ autoRemove: true, httpProxy: false }), 'autoRemove and httpProxy, also for host pods')
  const rule = 'is not a hostname (at most 64 characters: letters, digits and "-" in labels joined by ".", no label starting or ending with "-")'
  for (const bad of ['', '-web', 'web-', 'we b', 'web..x', 'web_1', 'a'.repeat(64), `${'a'.repeat(40)}.${'b'.repeat(30)}`]) {
    problems(t, iso({ hostname: bad }), [['hostname', `${JSON.stringify(bad)} ${rule}`]], `hostname ${JSON.stringify(bad)}`)
  }
  problems(t, iso({ hostname: 7 }), [['hostname', 'must be a string, not number 7']])
  problems(t, man({ hostname: 'web' }), [['hostname', 'needs "isolation": "namespaces" (host processes have the host\'s hostname)']], 'the hostname of a host pod')
  problems(t, man({ autoRemove: 'yes', httpProxy: 0 }), [['autoRemove', 'must be true or false, not string "yes"'], ['httpProxy', 'must be true or false, not number 0']])
})

t.test('apps', async (t) => {
  problems(t, man({ apps: {} }), [['apps', 'must be an array, not an object']])
  problems(t, { apiVersion: V }, [['apps', /^must be an array/]], 'missing')
  problems(t, man({ apps: [] }), [['apps', 'must have at least one app (only a mutable pod may start with none)']])
  problems(t, man({ apps: [], mutable: false }), [['apps', /at least one app/]], 'mutable false')
  problems(t, man({ apps: ['x'] }), [['apps[0]', 'must be an object, not string "x"']])
  problems(t, man({ apps: [app(), app()] }), [['apps[1].name', '"main" is the name of another app']], 'duplicate names')
  problems(t, man({ apps: [app(), app({ name: 'b' }), app({ name: 'b' })] }), [['apps[2].name', '"b" is the name of another app']])
  problems(t, man({ apps: [app({ name: 'Main' })] }), [['apps[0].name', /^"Main" must be 1 to 63 characters/]], 'app name syntax')
})

t.test('app type', async (t) => {
  problems(t, man({ apps: [app({ type: 'daemon' })] }), [['apps[0].type', 'must be "init", "regular" or "ephemeral", not string "daemon"']])
  problems(t, man({ apps: [app({ type: null })] }), [['apps[0].type', /not null$/]])
  problems(t, man({ apps: [app({ type: 'ephemeral' })] }), [['apps[0].type', 'ephemeral apps are only added to a running mutable pod, with "podctl app add --ephemeral"']], 'ephemeral refused')
  ok(t, man({ apps: [app({ type: 'ephemeral' })] }), 'ephemeral allowed with allowEphemeral', { allowEphemeral: true })
  ok(t, man({ apps: [app({ type: 'init' }), app({ name: 'r', type: 'regular' })] }))
})

t.test('exec', async (t) => {
  problems(t, man({ apps: [app({ exec: [] })] }), [['apps[0].exec', 'must be a non-empty array of strings, not an empty array']])
  problems(t, man({ apps: [app({ exec: 'ls -l' })] }), [['apps[0].exec', 'must be a non-empty array of strings, not string "ls -l"']])
  problems(t, man({ apps: [{ name: 'a' }] }), [['apps[0].exec', /^must be a non-empty array of strings/]], 'missing')
  problems(t, man({ apps: [app({ exec: ['ls', 1] })] }), [['apps[0].exec[1]', 'must be a string, not number 1']])
  problems(t, man({ apps: [app({ exec: ['ls', 'a\0b'] })] }), [['apps[0].exec[1]', 'must not contain a NUL character']])
  problems(t, man({ apps: [app({ exec: [''] })] }), [['apps[0].exec[0]', 'must name a program']])
  problems(t, man({ apps: [app({ exec: ['bin/sh'] })] }), [['apps[0].exec[0]', '"bin/sh" must be an absolute path or a name to look up on PATH']])
  problems(t, man({ apps: [app({ exec: ['./run'] })] }), [['apps[0].exec[0]', /must be an absolute path or a name/]])
  ok(t, man({ apps: [app({ exec: ['sh'] })] }), 'a bare name')
  ok(t, man({ apps: [app({ exec: ['/usr/bin/env', ''] })] }), 'an absolute path and an empty argument')
})

t.test('env', async (t) => {
  problems(t, man({ apps: [app({ env: ['A=1'] })] }), [['apps[0].env', 'must be an object of strings, not an array']])
  problems(t, man({ apps: [app({ env: { KEY: 1 } })] }), [['apps[0].env.KEY', 'must be a string, not number 1']])
  for (const bad of ['1X', 'A-B', 'A=B', 'A B', 'É']) {
    problems(t, man({ apps: [app({ env: { [bad]: 'v' } })] }), [[`apps[0].env[${JSON.stringify(bad)}]`, 'is not a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*)']], JSON.stringify(bad))
  }
  problems(t, man({ apps: [app({ env: { '': 'v' } })] }), [['apps[0].env', 'has an empty or invalid key ""']])
  ok(t, man({ apps: [app({ env: { _: '', a1: 'x', PATH: '/bin' } })] }))
})

t.test('workingDirectory', async (t) => {
  problems(t, man({ apps: [app({ workingDirectory: 'rel' })] }), [['apps[0].workingDirectory', '"rel" must be an absolute path']])
  problems(t, man({ apps: [app({ workingDirectory: '/a/../b' })] }), [['apps[0].workingDirectory', '"/a/../b" must not contain ".."']])
  problems(t, man({ apps: [app({ workingDirectory: '' })] }), [['apps[0].workingDirectory', 'must not be empty']])
  problems(t, man({ apps: [app({ workingDirectory: 1 })] }), [['apps[0].workingDirectory', 'must be a string, not number 1']])
})

t.test('volumes: the pod checks a unique name; the kind and what it holds are volume rules', async (t) => {
  problems(t, man({ volumes: 'x' }), [['volumes', 'must be an array, not string "x"']])
  problems(t, man({ volumes: [1] }), [['volumes[0]', 'must be an object, not number 1']])
  problems(t, man({ volumes: [vol({ name: 'A', kind: 'empty' })] }), [['volumes[0].name', /^"A" must be 1 to 63/]])
  problems(t, man({ volumes: [vol({ kind: 'empty' }), vol({ kind: 'empty' })] }), [['volumes[1].name', '"data" is the name of another volume']])
  ok(t, withVolume(vol({ kind: 'tmpfs', size: 1 })), 'without the volume rules, any kind and its fields pass')
})

t.test('mounts', async (t) => {
  const vols = [vol({ kind: 'empty' }), vol({ name: 'other', kind: 'empty' })]
  const mounts = (ms: unknown): Record<string, unknown> => man({ volumes: vols, apps: [app({ mounts: ms })] })
  problems(t, mounts({}), [['apps[0].mounts', 'must be an array, not an object']])
  problems(t, mounts(['x']), [['apps[0].mounts[0]', 'must be an object, not string "x"']])
  problems(t, mounts([{ volume: 'nope', path: '/d' }]), [['apps[0].mounts[0].volume', 'names no volume of the pod: "nope" is not in "volumes"']], 'an unknown volume')
  problems(
    t,
    man({ apps: [app({ mounts: [{ volume: 'data', path: '/d' }] })] }),
    [['apps[0].mounts[0].volume', 'names no volume of the pod: "data" is not in "volumes"']],
    'no volumes at all',
  )
  problems(t, mounts([{ volume: 'Data', path: '/d' }]), [['apps[0].mounts[0].volume', /^"Data" must be 1 to 63/]])
  problems(t, mounts([{ volume: 'data', path: 'd' }]), [['apps[0].mounts[0].path', '"d" must be an absolute path']])
  problems(t, mounts([{ volume: 'data', path: '/a/../d' }]), [['apps[0].mounts[0].path', '"/a/../d" must not contain ".."']])
  problems(t, mounts([{ volume: 'data', path: '/' }]), [['apps[0].mounts[0].path', 'cannot be "/", the app root itself']])
  problems(t, mounts([{ volume: 'data', path: '/d', readOnly: 'no' }]), [['apps[0].mounts[0].readOnly', 'must be true or false, not string "no"']])
  problems(
    t,
    mounts([
      { volume: 'data', path: '/d' },
      { volume: 'other', path: '/d' },
    ]),
    [['apps[0].mounts[1].path', '"/d" is already the mount path of apps[0].mounts[0]']],
    'duplicate mount paths',
  )
  problems(
    t,
    mounts([
      { volume: 'data', path: '/a/b' },
      { volume: 'other', path: '/a//b' },
    ]),
    [['apps[0].mounts[1].path', '"/a//b" is already the mount path of apps[0].mounts[0]']],
    'duplicates after normalization',
  )
  ok(
    t,
    man({ volumes: vols, apps: [app({ mounts: [{ volume: 'data', path: '/d' }] }), app({ name: 'b', mounts: [{ volume: 'data', path: '/d' }] })] }),
    'the same path in two apps is fine',
  )
  // volumes that are not an array: the mount check cannot know the names
  problems(t, man({ volumes: {}, apps: [app({ mounts: [{ volume: 'data', path: '/d' }] })] }), [['volumes', 'must be an array, not an object']])
})

t.test('a trailing slash does not make a mount path different', async (t) => {
  const m = man({
    volumes: [vol({ kind: 'empty' }), vol({ name: 'other', kind: 'empty' })],
    apps: [
      app({
        mounts: [
          { volume: 'data', path: '/d' },
          { volume: 'other', path: '/d/' },
        ],
      }),
    ],
  })
  t.match(manifestProblems(m), [{ path: 'apps[0].mounts[1].path', problem: /already the mount path/ }], '"/d" and "/d/" are the same mount path')
})

t.test('every problem is reported, in one message', async (t) => {
  const m = { apiVersion: 'v0', name: 'X', extra: true, apps: [{ name: 'a', exec: [] }, { name: 'a', exec: ['x'], type: 'bad' }] }
  const got = manifestProblems(m)
  t.strictSame(
    got.map((p) => p.path),
    ['extra', 'apiVersion', 'name', 'apps[0].exec', 'apps[1].type', 'apps[1].name'],
  )
  t.throws(() => validateManifest(m), {
    code: 'EUSAGE',
    message: /^invalid manifest: extra: unknown field .*; apiVersion: must be "podctl\/v1", not string "v0"; name: .*; apps\[0\]\.exec: .*; apps\[1\]\.type: .*; apps\[1\]\.name: "a" is the name of another app$/,
    hint: /Documentation\/manifest\.md/,
  })
})

t.test('parseManifest', async (t) => {
  t.strictSame(parseManifest(JSON.stringify(man())), man())
  t.throws(() => parseManifest('{'), { code: 'EUSAGE', message: /^invalid manifest: not valid JSON: / })
  t.throws(() => parseManifest(''), { code: 'EUSAGE', message: /^invalid manifest: not valid JSON/ })
  t.throws(() => parseManifest(' '.repeat(MAX_MANIFEST_BYTES + 1)), { code: 'EUSAGE', message: `invalid manifest: larger than ${MAX_MANIFEST_BYTES} bytes` })
  t.throws(() => parseManifest('[]'), { code: 'EUSAGE', message: 'invalid manifest: (top level): a manifest must be a JSON object, not an array' })
  t.throws(() => parseManifest(JSON.stringify(man({ apps: [app({ type: 'ephemeral' })] }))), { code: 'EUSAGE' })
  t.ok(parseManifest(JSON.stringify(man({ apps: [app({ type: 'ephemeral' })] })), { allowEphemeral: true }))
  t.throws(() => parseManifest('{"apiVersion":"podctl/v1","apps":[{"name":"a","exec":["x"]}],"__proto__":{}}'), { code: 'EUSAGE', message: /__proto__: unknown field/ }, 'a __proto__ key is just an unknown field')
})

t.test('appType and visitApps', async (t) => {
  const m = validateManifest(
    man({ apps: [app({ name: 'i1', type: 'init' }), app({ name: 'r1' }), app({ name: 'e1', type: 'ephemeral' }), app({ name: 'i2', type: 'init' }), app({ name: 'r2', type: 'regular' })] }),
    { allowEphemeral: true },
  ) as PodManifest
  t.equal(appType(m.apps[1]!), 'regular', 'the default type is regular')
  const visit = (mask: number): string[] => {
    const names: string[] = []
    visitApps(m, mask, (a) => void names.push(a.name))
    return names
  }
  t.strictSame(visit(AppTypeMask.init), ['i1', 'i2'])
  t.strictSame(visit(AppTypeMask.regular), ['r1', 'r2'])
  t.strictSame(visit(AppTypeMask.ephemeral), ['e1'])
  t.strictSame(visit(AppTypeMask.init | AppTypeMask.regular), ['i1', 'r1', 'i2', 'r2'])
  t.strictSame(visit(AppTypeMask.all), ['i1', 'r1', 'e1', 'i2', 'r2'])
  t.strictSame(visit(0), [])
  const seen: string[] = []
  t.equal(
    visitApps(m, AppTypeMask.all, (a) => {
      seen.push(a.name)
      return a.name !== 'e1'
    }),
    false,
    'stops when fn returns false',
  )
  t.strictSame(seen, ['i1', 'r1', 'e1'])
})

