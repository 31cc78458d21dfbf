// Keeps node_modules out of what tap's processinfo records in a test
// process. processinfo's module hooks read, measure and look up the source
// map of every module a test process loads, tap's own 130 included, for
// coverage and `tap --changed`; coverage leaves node_modules out anyway.
// That bookkeeping cost each test process about 0.3 s of CPU
// (Documentation/performance.md, "npm test"). tap's runner sets the
// exclusion (_TAPJS_PROCESSINFO_EXCLUDE_) itself, after its config is read,
// so package.json's "test-env" puts this in NODE_OPTIONS, which Node runs
// before the --import of processinfo that starts the hooks' thread with a
// copy of this environment.
const env = process.env
env._TAPJS_PROCESSINFO_EXCLUDE_ = String(/(^(node|tapmock):|[\\/](\.tap|tap-snapshots|node_modules)[\\/])/)

// Out of NODE_OPTIONS again: a grandchild started in another directory
// would not find this relative path (the exclusion above still reaches it
// through the environment).
env.NODE_OPTIONS = (env.NODE_OPTIONS ?? '').replace(/"?--import=\S*\/processinfo-exclude\.mjs"?/g, '').trim()
