// The doc-test's podctl server (test/helpers/doctest-podctl.ts) listens on
// 127.0.0.1, where any local user can connect, in a test process that is
// often root: only its script, which holds the secret, gets a command run.
import t from 'tap'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { promisify } from 'node:util'
import { OWN_LIMITS, podctlScript, serveDocPodctl } from '../helpers/doctest-podctl.js'
import { dataDir } from '../helpers/run-util.js'

/** Sends `bytes` as a client would; resolves with what came back before the server closed the connection. */
const ask = (port: number, bytes: Buffer): Promise<string> =>
  new Promise((resolve) => {
    const got: Buffer[] = []
    const socket = net.connect(port, '127.0.0.1', () => socket.end(bytes))
    socket.on('data', (b: Buffer) => got.push(b))
    socket.on('error', () => {})
    socket.on('close', () => resolve(Buffer.concat(got).toString('utf8')))
  })

/**
 * A request as the script makes it: secret, directory, limits, argc, args,
 * env, then a NUL more. Our own limits: with others the server would send
 * the script to bin/podctl, and run nothing itself.
 */
const request = (secret: string, args: string[]): Buffer => Buffer.from(`${[secret, '/', OWN_LIMITS, String(args.length), ...args, 'PATH=/usr/bin'].join('\0')}\0\0`)

t.test('a request without the secret runs nothing; one with it runs podctl in the thread', async (t) => {
  const server = await serveDocPodctl()
  const dir = dataDir(t)
  const prepare = ['--dir', dir, 'prepare', '-q', '--', 'true']
  const pods = (): string[] => (fs.existsSync(path.join(dir, 'pods', 'prepared')) ? fs.readdirSync(path.join(dir, 'pods', 'prepared')) : [])

  t.equal(await ask(server.port, request('0'.repeat(32), prepare)), '', 'a wrong secret: cut off, no answer')
  t.equal(await ask(server.port, request('', prepare)), '', 'no secret: cut off, no answer')
  t.same(pods(), [], 'and no pod was made')

  const answer = await ask(server.port, request(server.secret, prepare))
  t.same(pods(), [answer.split('\n')[1]], 'with the secret: the pod is made, and its UUID answered')
  t.match(answer, /^0\n[0-9a-f-]{36}\n$/, 'after exit code 0')
})

t.test('the script opens with the secret, and prints the answer and exits with its code', async (t) => {
  const secret = 'f'.repeat(32)
  const heard: Buffer[] = []
  const fake = net.createServer((socket) => {
    socket.on('data', (b: Buffer) => {
      heard.push(b)
      if (Buffer.concat(heard).subarray(-2).equals(Buffer.from([0, 0]))) socket.end('7\nwhat podctl printed\n')
    })
  })
  await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve))
  t.teardown(() => fake.close())
  const bin = path.join(t.testdir({}), 'podctl')
  fs.writeFileSync(bin, podctlScript({ port: (fake.address() as net.AddressInfo).port, secret }), { mode: 0o700 })
  // Asynchronously: the server answering it is this process.
  const r = await promisify(execFile)(bin, ['list']).then(() => ({ code: 0, stdout: '' }), (er: { code: number; stdout: string }) => er)
  t.equal(r.code, 7, 'the exit code answered')
  t.equal(r.stdout, 'what podctl printed\n', 'what was answered')
  t.ok(Buffer.concat(heard).toString('utf8').startsWith(`${secret}\0`), 'the request opens with the secret')
})
