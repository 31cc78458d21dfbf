/**
 * Helpers of the volume tests (test/volume/, test/bin/volume*.ts): the
 * actor process (test/helpers/volume-actor.mjs) and pods with volumes made
 * through the library.
 * Not a test file (test/helpers/ is excluded from discovery).
 */
import { fileURLToPath } from 'node:url'
import type { PodManifest } from '../../lib/pod/manifest.js'
import { createPod } from '../../lib/pod/prepare.js'
import type { Pod } from '../../lib/pod/pod.js'
import type { Teardown } from './common.js'
import { spawnNode, type Child } from './pod-util.js'

export const VOLUME_ACTOR = fileURLToPath(new URL('./volume-actor.mjs', import.meta.url))

/** Starts the actor and returns it with its first line. */
export const actor = async (t: Teardown, args: string[]): Promise<{ child: Child; first: string }> => {
  const child = spawnNode(t, VOLUME_ACTOR, args)
  return { child, first: await child.nextLine() }
}

/** A manifest with these volumes, and one app mounting each at /<name> (or as given). */
export const volumeManifest = (volumes: NonNullable<PodManifest['volumes']>, mounts?: { volume: string; path: string; readOnly?: boolean }[]): PodManifest => ({
  apiVersion: 'podctl/v1',
  apps: [{ name: 'app', exec: ['/bin/sh', '-c', 'exit 0'], mounts: mounts ?? volumes.map((v) => ({ volume: v.name, path: `/${v.name}` })) }],
  volumes,
})

/** A pod created through the library, locked by this process in prepare/ (closed at teardown). */
export const lockedPod = async (t: Teardown, dir: string, m: PodManifest): Promise<Pod> => {
  const pod = await createPod(dir, m, { sync: false })
  t.teardown(() => pod.close())
  return pod
}
