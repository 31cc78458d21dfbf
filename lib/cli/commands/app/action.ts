/** What the `podctl app` commands do: mutable pods and their apps. */
import { PodctlError, shortId } from '../../../errors.js'
import { API_VERSION, validateManifest } from '../../../pod/manifest.js'
import { podFromArg } from '../../../pod/find.js'
import { podView } from '../../../pod/view.js'
import { addApp, removeApp, startApp, stopApp } from '../../../run/apps.js'
import type { Context } from '../../context.js'
import { formatTable, isJson, keyValueLines, toJson, waitingLine, wantsHeader } from '../../output.js'
import { appFromCommand } from '../../pod-input.js'
import { runNewPod } from '../../run-pod.js'
import type { AppAddOptions, AppListOptions, AppSandboxOptions, AppStatusOptions, AppStopOptions } from './options.js'

/** app sandbox: a running mutable pod with no apps, detached or supervised here. */
export const sandbox = async (ctx: Context, dataDir: string, opts: AppSandboxOptions): Promise<void> => {
  const manifest = validateManifest({ apiVersion: API_VERSION, mutable: true, apps: [], ...(opts.name !== undefined ? { name: opts.name } : {}) })
  await runNewPod(ctx, dataDir, manifest, opts, (pod) =>
    ctx.io.err(`podctl: sandbox ${pod.uuid} is running; add apps with: podctl app add ${shortId(pod.uuid)} --name NAME -- CMD\n`),
  )
}

export const add = async (ctx: Context, dataDir: string, uuid: string, command: string[], opts: AppAddOptions): Promise<void> => {
  // `app add --name x -- sh -c ...` without the UUID hands "sh" in as the pod: say that, not that "-c" is no program.
  if (!/^[0-9a-fA-F-]+$/.test(uuid)) {
    throw new PodctlError('EUSAGE', `missing pod UUID: ${JSON.stringify(uuid)} is not one`, 'usage: podctl app add UUID --name NAME -- CMD [ARG...]')
  }
  const app = appFromCommand(opts.name, command, opts.env ?? [], opts.ephemeral === true)
  await addApp(podFromArg(dataDir, uuid), app)
}

/** Runs `fn` with a status line on a terminal saying what it waits for. */
const waitingFor = async (ctx: Context, what: string, fn: () => Promise<void>): Promise<void> => {
  const waiting = waitingLine(ctx.io)
  waiting.set(what)
  try {
    await fn()
  } finally {
    waiting.finish()
  }
}

export const start = (ctx: Context, dataDir: string, uuid: string, name: string): Promise<void> => {
  const pod = podFromArg(dataDir, uuid)
  return waitingFor(ctx, `waiting for app ${name} of pod ${shortId(pod.uuid)} to start (at most 30s)`, () => startApp(pod, name))
}

export const stop = (ctx: Context, dataDir: string, uuid: string, name: string, opts: AppStopOptions): Promise<void> => {
  const pod = podFromArg(dataDir, uuid)
  return waitingFor(ctx, `stopping app ${name} of pod ${shortId(pod.uuid)}: SIGTERM, SIGKILL after ${Math.round(opts.timeout / 1000)}s`, () => stopApp(pod, name, opts.timeout))
}

export const rm = (_ctx: Context, dataDir: string, uuid: string, name: string): Promise<void> => removeApp(podFromArg(dataDir, uuid), name)

export const list = (ctx: Context, dataDir: string, uuid: string, opts: AppListOptions): void => {
  const apps = podView(podFromArg(dataDir, uuid)).apps
  if (isJson(opts.format)) {
    ctx.io.out(toJson(apps, opts.format))
    return
  }
  const rows = apps.map((a) => [a.name, a.type, a.state, a.pid === null ? '-' : String(a.pid), a.exit_code === null ? '-' : String(a.exit_code)])
  ctx.io.out(formatTable(wantsHeader(opts) ? ['NAME', 'TYPE', 'STATE', 'PID', 'EXIT'] : undefined, rows))
}

export const status = (ctx: Context, dataDir: string, uuid: string, name: string, opts: AppStatusOptions): void => {
  const v = podView(podFromArg(dataDir, uuid))
  const a = v.apps.find((x) => x.name === name)
  if (!a) {
    const short = shortId(v.uuid)
    throw new PodctlError('ENOPOD', `pod ${short} has no app named ${JSON.stringify(name)}`, `see podctl app list ${short}`)
  }
  if (isJson(opts.format)) {
    ctx.io.out(toJson(a, opts.format))
    return
  }
  const lines = [`name=${a.name}`, `type=${a.type}`, `state=${a.state}`]
  if (a.pid !== null) lines.push(`pid=${a.pid}`)
  if (a.started_at) lines.push(`started=${a.started_at}`)
  if (a.finished_at) lines.push(`finished=${a.finished_at}`)
  if (a.exit_code !== null) lines.push(`exit_code=${a.exit_code}`)
  ctx.io.out(keyValueLines(lines))
}
