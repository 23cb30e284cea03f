/**
 * What the store's database can do, for the layers that branch on it (queue/, store/) instead
 * of on its name. SQL text that differs only in syntax (placeholders, index hints) still
 * follows the dialect; a behaviour (how rows are locked, how replicas are kept apart) follows a
 * capability here, so the reason for each branch is in its name.
 */
export type StoreDialect = 'sqlite' | 'postgres'

export interface StoreCapabilities {
  /**
   * One connection that runs one transaction at a time (SQLite in this process): a
   * transaction is exclusive by itself, and a round trip costs no network, so writes go one
   * statement at a time and one batch in flight.
   */
  singleConnection: boolean
  /** `select ... for update`: a transaction locks the rows it will change. */
  rowLocks: boolean
  /** `for update skip locked`: concurrent takers pass each other's locked rows by. */
  skipLocked: boolean
  /** Advisory locks: one sweep, one capacity change, one start-up at a time across replicas. */
  advisoryLocks: boolean
  /** LISTEN/NOTIFY: a write on one replica wakes long polls on the others. */
  listenNotify: boolean
  /** Several replicas may share the database: leader election, shared limits and presence. */
  sharedByReplicas: boolean
}

export function storeCapabilities(dialect: StoreDialect): StoreCapabilities {
  const postgres = dialect === 'postgres'
  return {
    singleConnection: !postgres,
    rowLocks: postgres,
    skipLocked: postgres,
    advisoryLocks: postgres,
    listenNotify: postgres,
    sharedByReplicas: postgres,
  }
}
