/**
 * Failpoints for crash tests: with PODCTL_TEST_FAILPOINT=<stage>[:<volume>], a process that reaches
 * that stage writes its pid to PODCTL_TEST_FAILPOINT_FILE and stops, for the test to SIGKILL it.
 */
import path from 'node:path'
import { writeFileAtomic } from '../fs/atomic.js'
import { sleepSync } from '../poll.js'

export type FailpointStage = 'mounting' | 'set-up' | 'linked' | 'unmounting' | 'update-written'

export const failpoint = (stage: FailpointStage, volume: string): void => {
  const want = process.env.PODCTL_TEST_FAILPOINT
  if (want === undefined || (want !== stage && want !== `${stage}:${volume}`)) return
  const file = process.env.PODCTL_TEST_FAILPOINT_FILE
  // Written whole and then renamed into place: a test that saw the file
  // empty would read pid 0, and kill(0) signals the test's own group.
  if (file) writeFileAtomic(path.dirname(file), path.basename(file), `${process.pid} ${stage} ${volume}\n`)
  for (;;) sleepSync(1_000) // until the test kills us
}
