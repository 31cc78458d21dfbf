/**
 * Table checks of a manifest validator: exactly these problems (field
 * path, what is wrong), in order, and the same list as one EUSAGE message
 * from the throwing form. Shared by the pod's rules (test/pod/manifest.ts)
 * and the volume rules (test/volume/manifest.ts).
 */
import { PodctlError } from '../../lib/errors.js'
import { formatProblems, type ManifestProblem, type ValidateOptions } from '../../lib/pod/manifest.js'
import type { Test } from './common.js'

export const V = 'podctl/v1'
export const app = (over: Record<string, unknown> = {}): Record<string, unknown> => ({ name: 'main', exec: ['/bin/true'], ...over })
export const man = (over: Record<string, unknown> = {}): Record<string, unknown> => ({ apiVersion: V, apps: [app()], ...over })
export const vol = (over: Record<string, unknown>): Record<string, unknown> => ({ name: 'data', ...over })
/** A manifest with one volume and one app mounting it. */
export const withVolume = (v: Record<string, unknown>): Record<string, unknown> =>
  man({ volumes: [v], apps: [app({ mounts: [{ volume: v.name ?? 'data', path: '/data' }] })] })

type Opts = Pick<ValidateOptions, 'allowEphemeral'>

/** problems() and ok() for one validator: its list form and its throwing form. */
export const manifestChecks = (problemsOf: (m: unknown, opts?: Opts) => ManifestProblem[], validate: (m: unknown, opts?: Opts) => unknown) => {
  const problems = (t: Test, m: unknown, want: ManifestProblem[] | Array<[string, string | RegExp]>, msg?: string, opts?: Opts): void => {
    const got = problemsOf(m, opts)
    const expected = want.map((w) => (Array.isArray(w) ? { path: w[0], problem: w[1] } : w))
    const what = msg ?? JSON.stringify(expected.map((e) => e.path))
    if (expected.some((e) => e.problem instanceof RegExp)) t.match(got, expected, what)
    else t.strictSame(got, expected, what)
    t.equal(got.length, expected.length, `${msg ?? ''}: ${got.length} problem(s)`)
    // The throwing form turns the same list into one EUSAGE message.
    if (expected.length > 0) {
      const er = t.throws(() => validate(m, opts)) as PodctlError
      t.type(er, PodctlError)
      t.equal(er.code, 'EUSAGE')
      t.equal(er.exitCode, 2)
      t.equal(er.message, `invalid manifest: ${formatProblems(got)}`)
    } else {
      t.equal(validate(m, opts), m, 'accepted: returns the same object')
    }
  }
  const ok = (t: Test, m: unknown, msg?: string, opts?: Opts): void => problems(t, m, [], msg, opts)
  return { problems, ok }
}
