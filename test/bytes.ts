// Sizes (lib/bytes.ts): podman's units (go-units' RAMInBytes, what
// `podman run --memory` reads) and Kubernetes' Ki, Mi, Gi, all powers of
// 1024, read alike by the flags, the manifest and the volume commands.
import t from 'tap'
import { parseBytes, sizeBytes } from '../lib/bytes.js'
import { PodctlError } from '../lib/errors.js'
import { memoryBytes } from '../lib/pod/manifest.js'

const KI = 1024
const MI = 1024 ** 2
const GI = 1024 ** 3

t.test("podman's units, in any case, with or without i and b", async (t) => {
  const cases: Array<[string, number]> = [
    ['0', 0],
    ['1048576', 1048576],
    ['512b', 512],
    ['512B', 512],
    ['8k', 8 * KI],
    ['8K', 8 * KI],
    ['8kb', 8 * KI],
    ['8KB', 8 * KI],
    ['8Ki', 8 * KI],
    ['8KiB', 8 * KI],
    ['64m', 64 * MI],
    ['64M', 64 * MI],
    ['64mb', 64 * MI],
    ['64MB', 64 * MI],
    ['64Mi', 64 * MI],
    ['64mib', 64 * MI],
    ['20mb', 20 * MI],
    ['1g', GI],
    ['1G', GI],
    ['1gb', GI],
    ['1Gi', GI],
    ['2t', 2 * 1024 ** 4],
    ['1.5g', 1.5 * GI],
    ['0.5k', 512],
    ['1.3k', 1331],
    ['64 m', 64 * MI],
    [' 64m ', 64 * MI],
  ]
  for (const [text, bytes] of cases) t.equal(sizeBytes(text), bytes, JSON.stringify(text))
  t.equal(parseBytes('64m'), parseBytes('64M'), '64m and 64M are one size')
})

t.test('what is not a size', async (t) => {
  for (const text of ['', 'abc', 'm', '-1', '-1m', '1x', '1mm', '1ii', '1i', '1kbb', '1  m', '1e3', '0x10', '1,5g', '.5g', '9007199254740993', '9999999999p']) {
    t.equal(sizeBytes(text), undefined, JSON.stringify(text))
  }
  t.throws(() => parseBytes('lots', '--size'), new PodctlError('EUSAGE', 'invalid --size "lots": expected a number of bytes, or with a unit: 512k, 64m, 1g, 1Gi (k, m, g, t: 1024, 1024², 1024³, 1024⁴ bytes, any case, with or without i and b)'))
})

t.test('the manifest reads memory with the same units', async (t) => {
  t.equal(memoryBytes('64m'), 64 * MI)
  t.equal(memoryBytes('64M'), 64 * MI)
  t.equal(memoryBytes('20mb'), 20 * MI)
  t.equal(memoryBytes(67108864), 64 * MI)
  t.equal(memoryBytes('lots'), undefined)
  t.equal(memoryBytes(-1), undefined)
})
