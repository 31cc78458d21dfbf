// etcd3 as the CLI loads it: its own bundle (dist/bundle/etcd3.js, made by
// lib/build/etcd-bundle.ts), with etcd's RPC definitions parsed at build
// time. The package definition the bundle builds from that JSON must be
// the one etcd3 builds from its .proto files: the same services, paths
// and messages, the same bytes on the wire. The bundle is loaded once per
// process, without node_modules/etcd3, and talks to a real etcd.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import path from 'node:path'
import { ROOT } from '../helpers/common.js'
import { podctl } from '../helpers/cli-util.js'
import { etcdMissing, startEtcd } from '../helpers/etcd.js'
import { dataDir } from '../helpers/run-util.js'
import { ETCD3_ENTRY, ETCD_RPC_PROTO, etcdRpcDescriptor } from '../../lib/build/etcd-bundle.js'

interface Method {
  path: string
  requestStream: boolean
  responseStream: boolean
  requestType: { type: unknown }
  responseType: { type: unknown }
  requestSerialize(value: object): Buffer
  responseSerialize(value: object): Buffer
  responseDeserialize(bytes: Buffer): object
}
type Definition = Record<string, Record<string, Method> & { type?: unknown }>
interface ProtoLoader {
  loadSync(file: string, options: object): Definition
  fromJSON(json: object, options: object): Definition
}

const loader = createRequire(ETCD3_ENTRY)('@grpc/proto-loader') as ProtoLoader
// What etcd3 gives loadSync (etcd3/lib/connection-pool.js).
const OPTIONS = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true }

/** A definition as plain data: services by method (path, streams, message descriptors), messages by descriptor. */
const shape = (d: Definition): unknown =>
  Object.fromEntries(
    Object.entries(d).map(([name, entry]) => [
      name,
      'type' in entry && entry.type !== undefined
        ? { message: entry.type }
        : Object.fromEntries(Object.entries(entry as Record<string, Method>).map(([m, x]) => [m, [x.path, x.requestStream, x.responseStream, x.requestType.type, x.responseType.type]])),
    ]),
  )

t.test('the definition built from the build-time JSON is the one etcd3 builds from its .proto files', async (t) => {
  const parsed = loader.loadSync(ETCD_RPC_PROTO, OPTIONS)
  const bundled = loader.fromJSON(etcdRpcDescriptor(), OPTIONS)
  t.same(Object.keys(bundled).sort(), Object.keys(parsed).sort(), 'the same services and messages')
  t.ok(Object.keys(parsed).includes('etcdserverpb.KV') && Object.keys(parsed).includes('mvccpb.KeyValue'), 'etcd\'s KV service and messages among them')
  t.strictSame(shape(bundled), shape(parsed), 'each method\'s path, streams and message descriptors, each message\'s descriptor')

  const range = { key: Buffer.from('/podctl/nodes/'), range_end: Buffer.from('/podctl/nodes0'), limit: '50', revision: '7', sort_order: 'DESCEND', keys_only: true }
  const bytes = parsed['etcdserverpb.KV']!['Range']!.requestSerialize(range)
  t.ok(bytes.length > 20, 'a RangeRequest with fields set encodes to bytes')
  t.same(bundled['etcdserverpb.KV']!['Range']!.requestSerialize(range), bytes, 'and to the same bytes from both')
  const put = parsed['etcdserverpb.KV']!['Put']!
  const reply = { header: { cluster_id: '1', member_id: '2', revision: '9', raft_term: '3' }, prev_kv: { key: Buffer.from('k'), value: Buffer.from('v'), lease: '5', version: '2', create_revision: '4', mod_revision: '8' } }
  const replyBytes = put.responseSerialize(reply)
  t.strictSame(bundled['etcdserverpb.KV']!['Put']!.responseSerialize(reply), replyBytes, 'a PutResponse encodes alike')
  t.strictSame(bundled['etcdserverpb.KV']!['Put']!.responseDeserialize(replyBytes), put.responseDeserialize(replyBytes), 'and decodes alike, int64s as strings')
  t.equal((put.responseDeserialize(replyBytes) as { header: { revision: unknown } }).header.revision, '9')
})

t.test('bin/podctl loads the bundle once per process, and nothing of node_modules/etcd3', async (t) => {
  const script = `
    const { load } = require(${JSON.stringify(path.join(ROOT, 'bin', 'load-bundle.js'))})
    const a = load('etcd3.js'), b = load('etcd3.js')
    const fromModules = Object.keys(require.cache).filter((f) => /node_modules[\\\\/](etcd3|@grpc|protobufjs)[\\\\/]/.test(f))
    console.log(JSON.stringify({ same: a === b, client: typeof a.Etcd3, fromModules }))`
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { PATH: process.env.PATH } })
  t.equal(r.status, 0, r.stderr)
  t.strictSame(JSON.parse(r.stdout), { same: true, client: 'function', fromModules: [] }, 'one instance, its client class, no module of etcd3, gRPC or protobufjs loaded from node_modules')
})

t.test('podctl --cluster talks to a real etcd through it', { skip: etcdMissing ?? false }, async (t) => {
  const etcd = await startEtcd(t, 1)
  const dir = dataDir(t)
  const fleet = (args: string[]) => podctl(dir, ['--cluster', etcd.endpoints, '--node', 'n1', ...args])
  t.equal(fleet(['volume', 'class', 'create', 'fast', '--provisioner', 'exec:fast']).status, 0, 'a class written (Txn)')
  const list = fleet(['volume', 'class', 'list', '--format', 'json'])
  t.equal(list.status, 0, list.stderr)
  t.match(JSON.parse(list.stdout), [{ name: 'fast', provisioner: 'exec:fast' }], 'and read back (Range)')
  const nodes = fleet(['node', 'list', '--format', 'json'])
  t.equal(nodes.status, 0, nodes.stderr)
  t.same(JSON.parse(nodes.stdout), [], 'no node registered: an empty range')
})
