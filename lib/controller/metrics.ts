/**
 * The controller's Prometheus metrics (prom-client), named as the external-provisioner's
 * plus podctl's own, and their HTTP endpoint with /healthz. Loaded only with --metrics-address.
 */
import http from 'node:http'
import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import { PodctlError } from '../errors.js'
import { Include, listPods } from '../pod/walk.js'

const CLAIM = 'controller_persistentvolumeclaim'
const VOLUME = 'controller_persistentvolume'

/** A fresh registry with the controller's metrics. */
export const newMetrics = () => {
  const registry = new Registry()
  const registers = [registry]
  const pods = new Gauge({ name: 'podctl_pods', help: 'Pods in the data dir by state', labelNames: ['state'] as const, registers })
  return {
    registry,
    provisionTotal: new Counter({ name: `${CLAIM}_provision_total`, help: 'Volumes provisioned for claims', labelNames: ['class', 'source'] as const, registers }),
    provisionFailed: new Counter({ name: `${CLAIM}_provision_failed_total`, help: 'Failed provision attempts', labelNames: ['class'] as const, registers }),
    provisionDuration: new Histogram({ name: `${CLAIM}_provision_duration_seconds`, help: 'Time a provisioner took', labelNames: ['class'] as const, registers }),
    deleteTotal: new Counter({ name: `${VOLUME}_delete_total`, help: 'Released volumes deleted', labelNames: ['class'] as const, registers }),
    deleteFailed: new Counter({ name: `${VOLUME}_delete_failed_total`, help: 'Failed delete attempts', labelNames: ['class'] as const, registers }),
    deleteDuration: new Histogram({ name: `${VOLUME}_delete_duration_seconds`, help: 'Time a delete took', labelNames: ['class'] as const, registers }),
    leader: new Gauge({ name: 'leader_election_master_status', help: '1 while this controller leads', labelNames: ['name'] as const, registers }),
    pods,
    gcDeleted: new Counter({ name: 'podctl_gc_pods_deleted_total', help: 'Pods deleted by the controller gc', registers }),
    /** Sets podctl_pods{state} from the data dir. */
    observePods: (dataDir: string): void => {
      const all = listPods(dataDir, Include.all)
      pods.reset()
      for (const p of all) {
        pods.inc({ state: p.state })
        p.close()
      }
    },
  }
}

export type ControllerMetrics = ReturnType<typeof newMetrics>

/** Parses `HOST:PORT` (`[::1]:9090` for IPv6); EUSAGE otherwise. */
export const parseAddress = (text: string): { host: string; port: number } => {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(text)
  const port = m ? Number(m[3]) : NaN
  if (!m || port > 65535) throw new PodctlError('EUSAGE', `invalid --metrics-address ${JSON.stringify(text)}: not HOST:PORT`, 'for example --metrics-address 127.0.0.1:9090')
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port }
}

/** Serves `path` (Prometheus text) and /healthz (200 while `healthy()`); resolves once listening. */
export const serveMetrics = (metrics: ControllerMetrics, address: string, path: string, healthy: () => boolean): Promise<http.Server> => {
  const { host, port } = parseAddress(address)
  const server = http.createServer((req, res) => {
    const url = (req.url ?? '/').split('?')[0]
    if (url === '/healthz') {
      const ok = healthy()
      res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ok\n' : 'not running\n')
    } else if (url === path) {
      metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
        (er: Error) => res.writeHead(500).end(`${er.message}\n`),
      )
    } else res.writeHead(404).end('not found\n')
  })
  return new Promise((resolve, reject) => {
    server.once('error', (er) => reject(new PodctlError('EFAILED', `cannot serve metrics on ${address}: ${(er as Error).message}`)))
    server.listen(port, host, () => resolve(server))
  })
}
