/**
 * etcd3, the etcd client `--cluster` commands and the controller load, as
 * a bundle of its own (dist/bundle/etcd3.js) with a code cache like the
 * CLI's. From node_modules, loading it cost a command more than its work:
 * gRPC and protobufjs in about 150 files, and etcd's .proto files parsed
 * again at every start (Documentation/devel/build.md, "etcd3"). The bundle
 * is given what that parse makes, as JSON made here at build time, through
 * a @grpc/proto-loader whose loadSync builds etcd3's package definition
 * from it (proto-loader's own fromJSON). Not part of the library.
 */
import { createRequire } from 'node:module'
import path from 'node:path'
import { build, type Plugin } from 'esbuild'

const requireHere = createRequire(import.meta.url)
/** etcd3's entry module in node_modules, and the proto-loader and protobufjs it would use. */
export const ETCD3_ENTRY = requireHere.resolve('etcd3')
const ETCD3_DIR = path.resolve(path.dirname(ETCD3_ENTRY), '..')
const PROTO_LOADER = createRequire(ETCD3_ENTRY).resolve('@grpc/proto-loader')
/** The .proto file etcd3 reads at start (etcd3/lib/connection-pool.js); it imports kv.proto and auth.proto. */
export const ETCD_RPC_PROTO = path.join(ETCD3_DIR, 'proto', 'rpc.proto')

/**
 * etcd's RPC definitions as protobufjs reads them, as JSON (protobufjs's
 * Root.toJSON). keepCase, as etcd3 asks: it is the one option of its
 * loadSync that changes what the parse makes (field names stay snake_case).
 */
export const etcdRpcDescriptor = (): object => {
  const protobuf = createRequire(PROTO_LOADER)('protobufjs') as { Root: new () => { loadSync(file: string, options: object): { toJSON(): object } } }
  return new protobuf.Root().loadSync(ETCD_RPC_PROTO, { keepCase: true }).toJSON()
}

/**
 * What the bundle has for `require('@grpc/proto-loader')` in etcd3's code:
 * the real one, with a loadSync that knows only etcd's rpc.proto and
 * refuses anything else, so that an etcd3 that one day reads another file
 * or parses with other options fails loudly at its first start rather
 * than talking to etcd with the wrong messages.
 */
const protoLoaderShim = (): string => `const loader = require('@grpc/proto-loader')
const RPC = ${JSON.stringify(etcdRpcDescriptor())}
module.exports = {
  ...loader,
  loadSync(file, options) {
    if (require('node:path').basename(file) !== 'rpc.proto' || options?.keepCase !== true) {
      throw new Error('podctl bundles etcd3 with etcd\\'s rpc.proto parsed with keepCase, and no other .proto: asked for ' + file)
    }
    return loader.fromJSON(RPC, options)
  },
}
`

/** The bundle's name in dist/bundle/ (without .js). */
const BUNDLE = 'etcd3'

/** For the CLI's bundles: lib's `import('etcd3')` stays a run-time require of the sibling bundle ./etcd3.js, as a command's import of its action does. */
export const etcdExternal: Plugin = {
  name: 'etcd3-external',
  setup(b) {
    b.onResolve({ filter: /^etcd3$/ }, () => ({ path: `./${BUNDLE}.js`, external: true }))
  },
}

/** Inside etcd3's bundle, etcd3's proto-loader is the shim above. */
const protoLoaderShimPlugin: Plugin = {
  name: 'etcd3-proto-loader',
  setup(b) {
    b.onResolve({ filter: /^@grpc\/proto-loader$/ }, (args) =>
      args.namespace === 'file' && args.importer.startsWith(ETCD3_DIR + path.sep) ? { path: ETCD_RPC_PROTO, namespace: 'etcd3-proto-loader' } : undefined,
    )
    b.onLoad({ filter: /.*/, namespace: 'etcd3-proto-loader' }, () => ({ contents: protoLoaderShim(), loader: 'js', resolveDir: path.dirname(ETCD3_ENTRY) }))
  },
}

/**
 * Writes `outdir`/etcd3.js. Without a source map, unlike podctl's own
 * bundles: its sources are node_modules', and a map would bring them into
 * the tests' coverage report (every child that loads the bundle counts
 * for the files its map names) and into --debug traces as if podctl's.
 */
export const buildEtcdBundle = async (outdir: string): Promise<void> => {
  await build({
    entryPoints: { [BUNDLE]: ETCD3_ENTRY },
    outdir,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    plugins: [protoLoaderShimPlugin],
    minifyWhitespace: true,
    minifySyntax: true,
    logLevel: 'warning',
  })
}
