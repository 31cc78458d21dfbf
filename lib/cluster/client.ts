/**
 * The fleet's etcd, through the etcd3 client (loaded only when a command names
 * a cluster: it costs about 90 ms). Every call has a deadline, so that a
 * command fails within 10 s, naming the endpoints, when etcd does not answer.
 */
import fs from 'node:fs'
// Types only: the module itself is loaded by Cluster.open.
import type { ComparatorBuilder, Etcd3, Lease } from 'etcd3'
import { PodctlError } from '../errors.js'

export interface ClusterOptions {
  /** Client URLs of the etcd members (`http://127.0.0.1:2379`). */
  endpoints: string[]
  /** Every key of podctl's starts with it (`/podctl/`). */
  prefix: string
  /** TLS: files of the CA, and of this client's certificate and key. */
  caCert?: string
  cert?: string
  key?: string
  /** etcd's user/password authentication. */
  user?: string
  password?: string
}

/** How long one call may take before the next member is tried; three tries fit in the 10 s a command may wait. */
const CALL_DEADLINE_MS = 3_000
/** Keys per read: pods' summaries are about 0.7 KB, so a page is well under gRPC's 4 MiB. */
const LIST_PAGE = 2_000
/** What a command waits for etcd at most, retries included. */
const COMMAND_DEADLINE_MS = 9_500

// Node warns (DEP0123) for each TLS connection to an IP address, which etcd endpoints usually are: the
// certificate is still checked against the IP (its subjectAltName), only the warning is dropped.
let quieted = false
const quietIpServerName = (): void => {
  if (quieted) return
  quieted = true
  const emit = process.emitWarning.bind(process) as (...args: unknown[]) => void
  process.emitWarning = ((...args: unknown[]) => {
    const code = typeof args[1] === 'object' && args[1] !== null ? (args[1] as { code?: string }).code : args[2]
    if (code === 'DEP0123') return
    emit(...args)
  }) as typeof process.emitWarning
}

/** A lease of this process's (grantLease); keys put with it go when it does. */
export interface ClusterLease {
  readonly etcd: Lease
  keepAlive(): Promise<void>
  revoke(): Promise<void>
  /** The client has given it up (renewals failed past its TTL, or it was revoked): keys put with it go, if not gone already. */
  lost(): boolean
}

/** What a transaction requires: the key's mod (or create, which a lock's holder keeps) revision is the one seen; '0': the key must not exist. */
export type Guard = { key: string; mod: string } | { key: string; created: string }

/** What a transaction writes when its guards hold. */
export type Write = { put: string; value: string; lease?: ClusterLease } | { delete: string }

/** A connection to the fleet's etcd, with podctl's prefix. */
export class Cluster {
  readonly options: ClusterOptions
  readonly #client: Etcd3

  private constructor(options: ClusterOptions, client: Etcd3) {
    this.options = options
    this.#client = client
  }

  /** Connects (lazily: the first call dials); options are checked here. */
  static async open(options: ClusterOptions): Promise<Cluster> {
    quietIpServerName()
    const { Etcd3 } = await import('etcd3')
    const read = (file: string | undefined, what: string): Buffer | undefined => {
      if (file === undefined) return undefined
      try {
        return fs.readFileSync(file)
      } catch (er) {
        throw new PodctlError('EUSAGE', `cannot read the ${what} ${file}: ${(er as Error).message}`)
      }
    }
    const ca = read(options.caCert, 'CA certificate (--cluster-cacert)')
    const cert = read(options.cert, 'client certificate (--cluster-cert)')
    const key = read(options.key, 'client key (--cluster-key)')
    if ((cert === undefined) !== (key === undefined)) throw new PodctlError('EUSAGE', '--cluster-cert and --cluster-key go together')
    const tls = options.endpoints.some((e) => e.startsWith('https://'))
    const client = new Etcd3({
      hosts: options.endpoints,
      dialTimeout: CALL_DEADLINE_MS,
      defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + CALL_DEADLINE_MS }),
      ...(tls || ca !== undefined ? { credentials: { rootCertificate: ca as Buffer, ...(cert && key ? { certChain: cert, privateKey: key } : {}) } } : {}),
      ...(options.user !== undefined ? { auth: { username: options.user, password: options.password ?? '' } } : {}),
    })
    return new Cluster(options, client)
  }

  /** Runs `fn` with a connection to the fleet, closed afterwards. */
  static async with<T>(options: ClusterOptions, fn: (c: Cluster) => Promise<T>): Promise<T> {
    const cluster = await Cluster.open(options)
    try {
      return await fn(cluster)
    } finally {
      cluster.close()
    }
  }

  /** Runs one request, bounded in time; any failure is EFAILED naming the endpoints. */
  async #call<T>(what: string, fn: (c: Etcd3) => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${COMMAND_DEADLINE_MS / 1000} s`)), COMMAND_DEADLINE_MS)))
    try {
      return await Promise.race([fn(this.#client), late])
    } catch (er) {
      throw this.#unreachable(what, er)
    } finally {
      clearTimeout(timer)
    }
  }

  #unreachable(what: string, er: unknown): PodctlError {
    const why = (er instanceof Error ? er.message : String(er))
      .split('\n')[0]!
      .replace(/[.\s]*Resolution note:\s*$/, '')
    const where = this.options.endpoints.join(', ')
    // etcd answered: the lease is gone (its TTL ran out while this process could not renew it).
    if (/expired or revoked/.test(why)) return new PodctlError('EFAILED', `cannot ${what}: etcd says its lease ran out (${why})`)
    // etcd answered, and said no (a bad password, a permission): not a matter of reaching it.
    if (er instanceof Error && /auth|permission|user name|password/i.test(`${er.name} ${why}`)) {
      return new PodctlError('EFAILED', `cannot ${what}: etcd at ${where} refused podctl (${why})`, 'check PODCTL_CLUSTER_USER and PODCTL_CLUSTER_PASSWORD, and the user\'s role in etcd')
    }
    return new PodctlError(
      'EFAILED',
      `cannot ${what}: etcd at ${where} did not answer (${why})`,
      'check --cluster (or PODCTL_CLUSTER), the TLS files (--cluster-cacert, --cluster-cert, --cluster-key), and that etcd runs and has its quorum: etcdctl endpoint health',
    )
  }

  /**
   * The keys under `prefix + sub` (prefix off) and their values, read in
   * pages at the first page's revision: one response for 10,000 pods (6.6 MB)
   * is over gRPC's 4 MiB limit on a message.
   */
  async list(sub: string): Promise<Map<string, string>> {
    return this.#call(`read ${this.options.prefix}${sub}`, async (c) => {
      const { Range } = await import('etcd3')
      const all = Range.prefix(this.options.prefix + sub)
      const out = new Map<string, string>()
      let start = all.start
      let revision: string | undefined
      for (;;) {
        const q = c.getAll().inRange(new Range(start, all.end)).limit(LIST_PAGE).sort('Key', 'Ascend')
        const page = await (revision === undefined ? q : q.revision(revision)).exec()
        revision ??= page.header.revision
        for (const kv of page.kvs) out.set(kv.key.toString('utf8').slice(this.options.prefix.length), kv.value.toString('utf8'))
        if (!page.more || page.kvs.length === 0) return out
        // The next page starts just after the last key of this one.
        start = Buffer.concat([page.kvs[page.kvs.length - 1]!.key, Buffer.from([0])])
      }
    })
  }

  /** The key's value and its mod revision (which a guard compares), or undefined when there is none. */
  async get(key: string): Promise<{ value: string; modRevision: string } | undefined> {
    return this.#call(`read ${this.options.prefix}${key}`, async (c) => {
      const kv = (await c.get(this.options.prefix + key).exec()).kvs[0]
      return kv === undefined ? undefined : { value: kv.value.toString('utf8'), modRevision: kv.mod_revision }
    })
  }

  /**
   * Makes all the writes if every guard holds (etcd's Txn); the revision made
   * (each key put has it as its mod revision), or undefined when a guard
   * failed. A call that timed out may still be applied: callers read again.
   */
  async commit(guards: Guard[], writes: Write[]): Promise<string | undefined> {
    return this.#call(`write ${writes.map((w) => ('put' in w ? w.put : w.delete)).join(', ')}`, async (c) => {
      const p = this.options.prefix
      let txn: ComparatorBuilder | undefined
      for (const g of guards) {
        const [column, rev] = 'mod' in g ? (['Mod', g.mod] as const) : (['Create', g.created] as const)
        txn = txn === undefined ? c.if(p + g.key, column, '==', rev) : txn.and(p + g.key, column, '==', rev)
      }
      txn ??= c.if(p, 'Version', '>', -1) // no guard: always true
      const ops = writes.map((w) => ('put' in w ? (w.lease?.etcd ?? c).put(p + w.put).value(w.value) : c.delete().key(p + w.delete)))
      const r = await txn.then(...ops).commit()
      return r.succeeded ? r.header.revision : undefined
    })
  }

  /**
   * A lease of `ttlS` seconds. With `onLost`, the client keeps it alive and
   * says when it could not; without, its holder renews it (`keepAlive`), so
   * that it knows when it last could and stops acting before etcd can give
   * away what the lease holds.
   */
  async grantLease(ttlS: number, onLost?: (why: string) => void): Promise<ClusterLease> {
    const etcd = this.#client.lease(ttlS, { autoKeepAlive: onLost !== undefined })
    etcd.on('lost', (er: Error) => onLost?.(er.message))
    const id = await this.#call('grant a lease', () => etcd.grant())
    return {
      etcd,
      keepAlive: async () => {
        const r = await this.#call('renew a lease', () => etcd.keepaliveOnce())
        if (Number(r.TTL) <= 0) throw new PodctlError('EFAILED', `the etcd lease ${id} has expired`)
      },
      revoke: () => this.#call('revoke a lease', () => etcd.revoke()),
      lost: () => etcd.revoked(),
    }
  }

  /**
   * Calls `onChange` with the key (prefix off) of every change under
   * `prefix + sub` until stopped. The client re-makes a broken watch; callers
   * relist now and then for what it missed.
   */
  watch(sub: string, onChange: (key: string, deleted: boolean) => void): () => Promise<void> {
    const p = this.options.prefix
    const w = this.#client.watch().prefix(p + sub).watcher()
    w.on('put', (kv) => onChange(kv.key.toString('utf8').slice(p.length), false))
    w.on('delete', (kv) => onChange(kv.key.toString('utf8').slice(p.length), true))
    w.on('error', () => {})
    return () => w.cancel()
  }

  async put(key: string, value: string): Promise<void> {
    await this.#call(`write ${this.options.prefix}${key}`, (c) => c.put(this.options.prefix + key).value(value).exec())
  }

  async delete(key: string): Promise<void> {
    await this.#call(`delete ${this.options.prefix}${key}`, (c) => c.delete().key(this.options.prefix + key).exec())
  }

  async deletePrefix(sub: string): Promise<void> {
    await this.#call(`delete ${this.options.prefix}${sub}`, (c) => c.delete().prefix(this.options.prefix + sub).exec())
  }

  close(): void {
    this.#client.close()
  }
}
