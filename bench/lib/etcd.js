// A 3-member etcd on loopback ports for the fleet benchmarks (etcd-server
// from Debian); killed when the process exits.
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { spawn, spawnSync } from 'node:child_process'

const freePort = () =>
  new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.once('error', reject)
    srv.listen({ host: '127.0.0.1', port: 0 }, () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
  })

/** A 3-member etcd on loopback; its endpoints, and a stop(). */
export const startEtcd = async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-bench-etcd-'))
  const ports = []
  while (ports.length < 6) {
    const p = await freePort()
    if (!ports.includes(p)) ports.push(p)
  }
  const members = [0, 1, 2].map((i) => ({ name: `b${i}`, client: `http://127.0.0.1:${ports[2 * i]}`, peer: `http://127.0.0.1:${ports[2 * i + 1]}` }))
  const initial = members.map((m) => `${m.name}=${m.peer}`).join(',')
  const procs = members.map((m) =>
    spawn('etcd', ['--name', m.name, '--data-dir', path.join(dir, m.name), '--listen-client-urls', m.client, '--advertise-client-urls', m.client, '--listen-peer-urls', m.peer, '--initial-advertise-peer-urls', m.peer, '--initial-cluster', initial, '--initial-cluster-state', 'new', '--initial-cluster-token', path.basename(dir), '--logger', 'zap', '--log-level', 'error', '--quota-backend-bytes', String(8 * 1024 ** 3)], { stdio: 'ignore' }),
  )
  const stop = () => {
    for (const p of procs) p.kill('SIGKILL')
    fs.rmSync(dir, { recursive: true, force: true })
  }
  process.on('exit', stop)
  const endpoints = members.map((m) => m.client).join(',')
  for (let i = 0; i < 200; i++) {
    if (spawnSync('etcdctl', ['--endpoints', endpoints, 'endpoint', 'health'], { stdio: 'ignore' }).status === 0) return { endpoints, stop }
    await new Promise((r) => setTimeout(r, 100))
  }
  stop()
  throw new Error('etcd did not become healthy in 20 s')
}

