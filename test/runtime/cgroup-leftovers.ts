// The cgroups a runtime leaves when it is killed while it makes a
// container (its supervisor SIGKILLed with it): directories under
// /podctl/<uuid> in some hierarchies, and no runtime state to delete them
// by. rm and gc (podTeardown, lib/runtime/pod-runtime.ts) remove them from
// every hierarchy where they are empty, and never one that holds a process.
import t from 'tap'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { cgroupLayout, canMakeCgroups } from '../../lib/proc/cgroups.js'
import { podctl } from '../helpers/cli-util.js'
import { cgroupMounts, containersMissing, podCgroupIn, podCgroupsLeft } from '../helpers/containers.js'
import { dataDir } from '../helpers/run-util.js'

const layout = cgroupLayout()
const mounts = cgroupMounts()
const skip = process.getuid?.() !== 0 ? 'needs root, to make cgroups' : (containersMissing() ?? (canMakeCgroups(layout) ? false : 'no writable cgroup hierarchy here'))

const quietly = (f: () => void): void => {
  try {
    f()
  } catch {
    // gone already, or never made
  }
}

/** Where pod `uuid`'s cgroup is in the hierarchy mounted at `mount` (podctl's pods are at /podctl/<uuid> from the root here). */
t.test('rm removes the empty cgroups a killed runtime left, in every hierarchy, and leaves one that holds a process', { skip }, async (t) => {
  const dir = dataDir(t)
  const uuidFile = path.join(path.dirname(dir), 'uuid')
  const r = podctl(dir, ['run', '--uuid-file-save', uuidFile, '--isolation', 'namespaces', '--network', 'none', '--', 'true'])
  t.equal(r.status, 0, r.stderr)
  const uuid = fs.readFileSync(uuidFile, 'utf8').trim()
  t.same(podCgroupsLeft(uuid, mounts), [], 'the runtime removed its cgroups when the pod ended')

  // What runc killed midway leaves: the pod's cgroup and an app's below it, in half the hierarchies.
  const leftIn = mounts.filter((_, i) => i % 2 === 0)
  for (const m of leftIn) fs.mkdirSync(path.join(podCgroupIn(m, uuid), 'app-a'), { recursive: true })
  // And one with a process in it, which rm must not take from it.
  const busyMount = layout.v1.get('pids')?.mountPoint ?? layout.v2?.mountPoint
  const busy = busyMount === undefined ? undefined : path.join(podCgroupIn(busyMount, uuid), 'app-busy')
  const sleeper = spawn('sleep', ['300'], { stdio: 'ignore' })
  t.teardown(() => {
    // Out of the test's cgroups first, so that they can go whatever the test got to.
    if (busyMount !== undefined) quietly(() => fs.writeFileSync(path.join(busyMount, 'cgroup.procs'), String(sleeper.pid)))
    sleeper.kill('SIGKILL')
    for (const m of mounts) for (const c of ['app-a', 'app-busy', '']) quietly(() => fs.rmdirSync(path.join(podCgroupIn(m, uuid), c)))
  })
  if (busy !== undefined) {
    fs.mkdirSync(busy, { recursive: true })
    fs.writeFileSync(path.join(busy, 'cgroup.procs'), String(sleeper.pid))
  }

  const rm = podctl(dir, ['rm', uuid])
  t.equal(rm.status, 0, `rm exits 0: ${rm.stderr}`)
  t.equal(rm.stderr, '', 'and says nothing')
  t.same(podCgroupsLeft(uuid, mounts), busyMount === undefined ? [] : [busyMount], "the pod's cgroups are gone from every hierarchy but the busy one")
  if (busy !== undefined) {
    t.ok(fs.existsSync(busy), 'the cgroup that holds a process is still there')
    t.equal(fs.readFileSync(path.join(busy, 'cgroup.procs'), 'utf8').trim(), String(sleeper.pid), 'with its process in it')
  }
})
