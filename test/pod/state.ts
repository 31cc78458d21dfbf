import t from 'tap'
import { deriveState, parseState, POD_STATES } from '../../lib/pod/state.js'
import { POD_DIRS } from '../../lib/pod/layout.js'

t.test('the state table of CONTRACT §2', async (t) => {
  const table: Record<string, [string, string]> = {
    embryo: ['embryo', 'embryo'],
    prepare: ['preparing', 'aborted prepare'],
    prepared: ['prepared', 'prepared'],
    run: ['running', 'exited'],
    'exited-garbage': ['exited deleting', 'exited garbage'],
    garbage: ['deleting', 'garbage'],
  }
  for (const dir of POD_DIRS) {
    t.equal(deriveState(dir, true), table[dir]![0], `${dir} locked`)
    t.equal(deriveState(dir, false), table[dir]![1], `${dir} unlocked`)
  }
})

t.test('parseState accepts spaces and hyphens', async (t) => {
  t.equal(parseState('exited-garbage'), 'exited garbage')
  t.equal(parseState('Running'), 'running')
  t.equal(parseState('nope'), undefined)
  t.equal(POD_STATES.length, 10)
})
