/** What `podctl controller` and `podctl controller status` do. */
import { execFile } from 'node:child_process'
import { setMaxListeners } from 'node:events'
import type { Cluster } from '../../../cluster/client.js'
import { ProvisionController, type GcRunner } from '../../../controller/controller.js'
import { leaseLive, readLease, type Lease } from '../../../election/file.js'
import { PodctlError, oneLine } from '../../../errors.js'
import type { FleetRef } from '../../../storage/fleet/store.js'
import type { Context } from '../../context.js'
import { isJson, keyValueLines, toJson } from '../../output.js'
import type { ControllerCliOptions } from './options.js'

/**
 * One gc pass as `podctl gc` in a child process: a pass over 10,000 pods
 * grows a Node heap by some 50 MiB, which a long-lived controller would
 * keep (performance.md, "The controller").
 */
const gcInChild: GcRunner = (dataDir, periods) =>
  new Promise((resolve, reject) => {
    const args = [process.argv[1]!, '--dir', dataDir, 'gc', '--grace-period', `${periods.gracePeriodMs}ms`, '--expire-prepared', `${periods.expirePreparedMs}ms`, '--format', 'json']
    execFile(process.execPath, args, { maxBuffer: 64 * 1024 * 1024 }, (er, stdout, stderr) => {
      let r: { marked?: unknown[]; deleted?: unknown[] } | undefined
      try {
        r = JSON.parse(stdout) as typeof r
      } catch {
        // no JSON: a failure, said below
      }
      if (r && Array.isArray(r.marked) && Array.isArray(r.deleted)) return resolve({ marked: r.marked.length, deleted: r.deleted.length })
      reject(new Error(`podctl gc failed${er ? ` (${er.message.split('\n')[0]})` : ''}: ${oneLine(stderr.trim()) || 'no output'}`))
    })
  })

/** The controller's log lines on stderr: text (one line each: a provisioner's message may hold newlines), or one JSON object a line (--log-format). */
const logger =
  (ctx: Context, opts: ControllerCliOptions) =>
  (line: string, time = new Date().toISOString()): void =>
    ctx.io.err(opts.logFormat === 'json' ? `${JSON.stringify({ time, msg: line })}\n` : `podctl controller: ${time} ${oneLine(line)}\n`)

/**
 * With --cluster: this node's pods in the fleet's view (fleet.md), for as
 * long as the controller runs. The node's lease is the controller's
 * --lease-duration; etcd being away is logged and retried, never fatal;
 * a live controller holding the node's name is (NodeTaken, exit 1).
 */
const publishToFleet = async (ctx: Context, dataDir: string, opts: ControllerCliOptions, fleet: FleetRef, cluster: Cluster, holder: string, onTaken: (er: Error) => void) => {
  const { FleetPublisher } = await import('../../../controller/fleet.js')
  const { podctlVersion } = await import('../../version-info.js')
  const log = logger(ctx, opts)
  const publisher = new FleetPublisher(dataDir, cluster, {
    node: fleet.node,
    holder,
    version: podctlVersion(),
    ttlS: Math.max(1, Math.round(opts.leaseDuration / 1000)),
    resyncMs: opts.resync,
    log,
    onTaken,
  })
  await publisher.start()
  return { stop: (): Promise<void> => publisher.stop() }
}

/**
 * With --cluster: the fleet's claims and volumes, and its one leader
 * (fleet.md), over one connection that the publisher shares.
 */
const inFleet = async (dataDir: string, fleet: FleetRef, identity: string | undefined, leaseDurationMs: number) => {
  const { openFleet } = await import('../../../storage/fleet/store.js')
  const { FleetElection } = await import('../../../election/etcd.js')
  const store = await openFleet(fleet, dataDir, identity)
  return { store, election: new FleetElection(store.cluster, store.identity, fleet.node, leaseDurationMs) }
}

/**
 * How long after SIGTERM the controller may live, whatever etcd does
 * (CONTRACT §8: 2 s). Its orderly stop takes less (controller.ts); what
 * is still waiting on an etcd that does not answer (a call, or a gRPC
 * connection that a stopped member never closes) keeps no process alive
 * past this.
 */
const STOP_DEADLINE_MS = 1500

/** Races `p` against `ms`: a step of the stop that must not wait on etcd longer. */
const atMost = (p: Promise<unknown>, ms: number): Promise<unknown> => Promise.race([p.catch(() => undefined), new Promise((r) => setTimeout(r, Math.max(0, ms)).unref())])

/** Runs the controller in the foreground until SIGTERM or SIGINT (exit 0), or one pass with --once. */
export const runController = async (ctx: Context, dataDir: string, opts: ControllerCliOptions, fleet?: FleetRef): Promise<void> => {
  if (opts.renewDeadline >= opts.leaseDuration) {
    throw new PodctlError('EUSAGE', `--renew-deadline (${opts.renewDeadline} ms) must be shorter than --lease-duration (${opts.leaseDuration} ms)`, 'a leader must stop working before its lease can run out')
  }
  if (opts.retryPeriod <= 0 || opts.resync <= 0) throw new PodctlError('EUSAGE', '--retry-period and --resync must be more than 0s')
  const log = logger(ctx, opts)
  const metrics = opts.metricsAddress === undefined ? undefined : (await import('../../../controller/metrics.js')).newMetrics()
  const stop = new AbortController()
  // Every worker, watch and timer of the controller waits on it (with --workers 4 and a fleet, over Node's warning at 10).
  setMaxListeners(0, stop.signal)
  let stopAt: number | undefined
  let publisher: { stop: () => Promise<void> } | undefined
  let stopping: Promise<unknown> | undefined
  const onSignal = (): void => {
    if (stopAt !== undefined) return
    stopAt = Date.now()
    stop.abort()
    // The node's lease goes at once, beside the controller's own stop.
    stopping = publisher === undefined ? undefined : atMost(publisher.stop(), STOP_DEADLINE_MS - 400)
    setTimeout(() => {
      log(`stopped ${Date.now() - stopAt!} ms after the signal, without waiting further for etcd`)
      process.exit()
    }, STOP_DEADLINE_MS).unref()
  }
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)
  let taken: Error | undefined
  const shared = fleet === undefined ? undefined : await inFleet(dataDir, fleet, opts.identity, opts.leaseDuration)
  const identity = shared?.store.identity ?? opts.identity
  const c = new ProvisionController(dataDir, null, null, {
    ...(identity !== undefined ? { identity } : {}),
    ...(shared ? { store: shared.store, election: shared.election } : {}),
    ...(opts.provisionersDir !== undefined ? { provisionersDir: opts.provisionersDir } : {}),
    resyncPeriod: opts.resync,
    threadiness: opts.workers,
    exponentialBackoff: opts.exponentialBackoff,
    failedProvisionThreshold: opts.failedProvisionThreshold,
    failedDeleteThreshold: opts.failedDeleteThreshold,
    leaderElection: opts.leaderElect,
    leaseDuration: opts.leaseDuration,
    renewDeadline: opts.renewDeadline,
    retryPeriod: opts.retryPeriod,
    gcInterval: opts.gcInterval,
    gcGracePeriod: opts.gcGracePeriod,
    gcExpirePrepared: opts.gcExpirePrepared,
    once: opts.once === true,
    gcRunner: gcInChild,
    ...(metrics ? { metrics } : {}),
    log,
  })
  let running = true
  let server: Awaited<ReturnType<typeof import('../../../controller/metrics.js').serveMetrics>> | undefined
  try {
    server = metrics ? await (await import('../../../controller/metrics.js')).serveMetrics(metrics, opts.metricsAddress!, opts.metricsPath, () => running) : undefined
    if (shared && !stop.signal.aborted) {
      // Registered before the controller campaigns: a node name held by a live controller is refused before anything is done under it.
      const onTaken = (er: Error): void => {
        taken = er
        stop.abort()
      }
      const started = publishToFleet(ctx, dataDir, opts, fleet!, shared.store.cluster, shared.store.identity, onTaken)
      const p = await Promise.race([started, new Promise<undefined>((r) => stop.signal.addEventListener('abort', () => r(undefined), { once: true }))])
      if (p === undefined) void started.then((x) => x.stop()).catch(() => undefined)
      publisher = p
    }
    if (!stop.signal.aborted) await c.run(stop.signal)
  } finally {
    await (stopping ?? atMost(publisher?.stop() ?? Promise.resolve(), STOP_DEADLINE_MS - 400))
    shared?.store.close()
    running = false
    process.off('SIGTERM', onSignal)
    process.off('SIGINT', onSignal)
    server?.close()
    server?.closeAllConnections()
  }
  if (taken) throw taken
}

/** The lease as `controller status` shows it. */
interface LeaseView {
  holder: string | null
  alive: boolean
  acquired_at: string | null
  renewed_at: string | null
  lease_duration_s: number | null
  transitions: number
}

const viewOf = (l: Lease | undefined): LeaseView => ({
  holder: l?.holder ?? null,
  alive: leaseLive(l),
  acquired_at: l?.acquired_at ?? null,
  renewed_at: l?.renewed_at ?? null,
  lease_duration_s: l?.lease_duration_s ?? null,
  transitions: l?.transitions ?? 0,
})

/** `controller status --cluster`: the fleet's leader, from its election key (CONTRACT §11). */
const fleetStatus = async (ctx: Context, fleet: FleetRef, opts: { format: string }): Promise<void> => {
  const { Cluster } = await import('../../../cluster/client.js')
  const { fleetLeader } = await import('../../../election/etcd.js')
  const found = await Cluster.with(fleet.cluster, fleetLeader)
  const l = found.leader
  const v = {
    holder: l?.holder ?? null,
    node: l?.node ?? null,
    alive: l !== undefined,
    acquired_at: l?.acquired_at ?? null,
    lease_duration_s: l?.lease_duration_s ?? null,
    transitions: found.history.transitions,
  }
  if (isJson(opts.format)) return ctx.io.out(toJson(v, opts.format))
  const lines = [`holder=${v.holder ?? ''}`, `node=${v.node ?? ''}`, `alive=${v.alive}`]
  if (v.acquired_at) lines.push(`acquired=${v.acquired_at}`)
  if (v.lease_duration_s !== null) lines.push(`lease_duration=${v.lease_duration_s}s`)
  lines.push(`transitions=${v.transitions}`)
  ctx.io.out(keyValueLines(lines))
}

export const controllerStatus = async (ctx: Context, dataDir: string, opts: { format: string }, fleet?: FleetRef): Promise<void> => {
  if (fleet) return fleetStatus(ctx, fleet, opts)
  const v = viewOf(readLease(dataDir))
  if (isJson(opts.format)) {
    ctx.io.out(toJson(v, opts.format))
    return
  }
  const lines = [`holder=${v.holder ?? ''}`, `alive=${v.alive}`]
  if (v.acquired_at) lines.push(`acquired=${v.acquired_at}`)
  if (v.renewed_at) lines.push(`renewed=${v.renewed_at}`)
  if (v.lease_duration_s !== null) lines.push(`lease_duration=${v.lease_duration_s}s`)
  lines.push(`transitions=${v.transitions}`)
  ctx.io.out(keyValueLines(lines))
}
