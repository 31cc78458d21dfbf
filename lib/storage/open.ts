/** The store a command works on: the fleet's when it names one (--cluster), else the data dir's. */
import { openFleet, type FleetRef } from './fleet/store.js'
import { LocalStore } from './local/store.js'
import type { ClaimStore } from './store.js'

/** Runs `fn` on the store of the fleet `fleet` (this node's data dir `dataDir`), or of `dataDir`; a fleet's connection is closed after. */
export const withStore = async <T>(dataDir: string, fleet: FleetRef | undefined, fn: (store: ClaimStore) => Promise<T>): Promise<T> => {
  const store = fleet ? await openFleet(fleet, dataDir) : new LocalStore(dataDir)
  try {
    return await fn(store)
  } finally {
    store.close()
  }
}
