/**
 * Helpers of the volume tests (test/volume/, test/bin/volume*.ts): the
 * actor process (test/helpers/volume-actor.mjs), pods with volumes made
 * through the library, and looking at a tree without following links.
 * Not a test file (test/helpers/ is excluded from discovery).
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { PodManifest } from '../../lib/pod/manifest.js'
import { createPod } from '../../lib/pod/prepare.js'
import type { Pod } from '../../lib/pod/pod.js'
import { spawnNode, type Child, type Teardown } from './pod-util.js'

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

/**
 * Every entry under `root` as "rel" (file), "rel/" (dir) or "rel -> target"
 * (link), sorted; null when `root` is missing. Never follows a link.
 */
export const listTree = (root: string): string[] | null => {
  if (!fs.existsSync(root)) return null
  const out: string[] = []
  const walk = (dir: string, rel: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name
      if (e.isSymbolicLink()) out.push(`${r} -> ${fs.readlinkSync(path.join(dir, e.name))}`)
      else if (e.isDirectory()) {
        out.push(`${r}/`)
        walk(path.join(dir, e.name), r)
      } else out.push(r)
    }
  }
  walk(root, '')
  return out.sort()
}

/** A snapshot of a tree with file contents, to prove nothing in it changed. */
export const snapshot = (root: string): string => {
  const entries = listTree(root) ?? []
  return entries
    .map((e) => (e.endsWith('/') || e.includes(' -> ') ? e : `${e}=${fs.readFileSync(path.join(root, e), 'utf8')}`))
    .join('\n')
}
