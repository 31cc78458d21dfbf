/**
 * How the tests start a Node process of their own (podctl, a lock holder,
 * a race contender): through `env -u NODE_OPTIONS`. tap's processinfo
 * wraps child_process in every test process and puts its `--import` back
 * into NODE_OPTIONS of every child spawned, whatever env it is given
 * (deleting NODE_OPTIONS from that env does nothing); a Node child started
 * under it loads processinfo's module hooks and coverage session, which
 * cost about 0.8 s of CPU per process here, several times the start of
 * podctl itself (Documentation/performance.md, "npm test"). `env` is not
 * Node, and the Node it execs keeps its pid. Also, under that CommonJS
 * require hook Node 20 cannot load the extensionless ESM bin/podctl
 * (ERR_REQUIRE_CYCLE_MODULE). NODE_V8_COVERAGE is kept unless told, so
 * such runs still count for coverage where it is set.
 * PODCTL_TEST_CHILD_COVERAGE=1 starts Node children directly instead,
 * under processinfo, to measure their coverage too.
 */
const ENV = '/usr/bin/env'

export const childCoverage = process.env.PODCTL_TEST_CHILD_COVERAGE === '1'

// NODE_EXTRA_CA_CERTS (set on these machines) makes every Node process
// read and parse a bundle of certificates as it starts, about half of
// Node's start-up CPU here; podctl opens TLS connections only with
// --cluster and the CA it is given, so the tests' podctl goes without it.
const NOT_PASSED = ['NODE_OPTIONS', 'NODE_EXTRA_CA_CERTS']

export const launcher = (argv: string[], coverage = true): [string, string[]] => [
  ENV,
  [...NOT_PASSED.flatMap((v) => ['-u', v]), ...(coverage ? [] : ['-u', 'NODE_V8_COVERAGE']), process.execPath, ...argv],
]

/** The environment podctl gets from launcher(): `env` without what it takes out. */
export const childEnv = (env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(env).filter(([k]) => !NOT_PASSED.includes(k)))

/** `node argv...` as a test starts a helper script: bare, or under processinfo when its coverage is asked for. */
export const nodeCommand = (argv: string[]): [string, string[]] => (childCoverage ? [process.execPath, argv] : launcher(argv))
