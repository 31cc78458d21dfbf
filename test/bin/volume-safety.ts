// Links planted by an app never make podctl read, write or delete outside
// the volume. The app of a running pod plants links out
// of every volume it can write and replaces directories on the way to its
// mount points with links; then podctl walks the volumes (status), updates
// the files volume, stops and removes the pod, and recycles the persistent
// volume. The directory the links point at and the host path must come out
// exactly as they were. Spawns bin/podctl.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { manifestFile, podDir, pollUntil, snapshot } from '../helpers/common.js'
import { podctl, podctlJson, runDetached } from '../helpers/cli-util.js'
import { dataDir } from '../helpers/run-util.js'

t.test('an app that plants links everywhere cannot make podctl touch what they point at', async (t) => {
  const dir = dataDir(t)
  const outside = path.join(dir, 'outside')
  const host = path.join(dir, 'host-src')
  fs.mkdirSync(path.join(outside, 'lib', 'data'), { recursive: true })
  fs.writeFileSync(path.join(outside, 'victim'), 'precious')
  fs.writeFileSync(path.join(outside, 'lib', 'data', 'file'), 'precious too')
  fs.mkdirSync(host)
  fs.writeFileSync(path.join(host, 'keep'), 'host')
  const outsideBefore = snapshot(outside)
  const hostBefore = snapshot(host)
  podctl(dir, ['volume', 'create', 'db', '--reclaim', 'recycle'])
  const script = `
R=$PODCTL_APP_ROOT; O=${outside}
ln -s $O $R/var/lib/data/escape; ln -s $O/victim $R/var/lib/data/victim
ln -s $O $R/db/escape; ln -s $O/victim $R/db/victim; mkdir $R/db/d; ln -s $O $R/db/d/deeper
ln -sfn $O $R/cfg/..data; ln -sfn $O/victim $R/cfg/a
mv $R/var $R/var.moved; ln -s $O $R/var
touch $R/var.moved/lib/data/planted
exec sleep 300`
  const m = manifestFile(dir, {
    apiVersion: 'podctl/v1',
    apps: [
      {
        name: 'app',
        exec: ['/bin/sh', '-c', script],
        mounts: [
          { volume: 'data', path: '/var/lib/data' },
          { volume: 'cfg', path: '/cfg' },
          { volume: 'db', path: '/db' },
          { volume: 'host', path: '/host' },
        ],
      },
    ],
    volumes: [
      { name: 'data', kind: 'empty' },
      { name: 'cfg', kind: 'files', files: { a: { content: '1' } } },
      { name: 'db', kind: 'persistent', claim: 'db' },
      { name: 'host', kind: 'host', source: host },
    ],
  })
  const uuid = await runDetached(t, dir, ['--manifest', m])
  await pollUntil('the app to plant its links', () => fs.existsSync(path.join(podDir(dir, uuid)!, 'volumes', 'data', 'planted')))

  const st = await podctlJson(t, dir, ['status', uuid, '--format', 'json'])
  const data = st.volumes.find((v: { name: string }) => v.name === 'data')
  t.equal(data.used_inodes, 4, 'the empty volume counts its links, not what they point at (dir, 2 links, planted)')
  fs.writeFileSync(path.join(dir, 'new'), '2')
  const up = podctl(dir, ['volume', 'update', uuid, 'cfg', '--from-file', `a=${path.join(dir, 'new')}`])
  t.equal(up.status, 0, up.stderr)
  t.equal(fs.readFileSync(path.join(podDir(dir, uuid)!, 'volumes', 'cfg', 'a'), 'utf8'), '2', 'the update went into the volume')
  t.equal(snapshot(outside), outsideBefore, 'the update wrote nothing through the planted ..data or a')

  t.equal(podctl(dir, ['stop', uuid]).status, 0)
  const rm = podctl(dir, ['rm', uuid])
  t.equal(rm.status, 0, rm.stderr)
  t.equal(podDir(dir, uuid), undefined)
  t.same(fs.readdirSync(path.join(dir, 'volumes', 'db', 'data')), [], 'the persistent volume was recycled: its links unlinked')
  t.equal(snapshot(outside), outsideBefore, 'nothing the links pointed at was read as ours, written or deleted')
  t.equal(snapshot(host), hostBefore, 'the host path is exactly as it was')
})
