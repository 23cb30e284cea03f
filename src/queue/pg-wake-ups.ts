import type pg from 'pg'
import { WakeUps } from './wake-ups.js'

/** The PostgreSQL channel of the replicas' wake-ups. */
export const WAKE_CHANNEL = 'podyard_wake'
/**
 * How often a long poll re-reads the store when wake-ups cross replicas: only a safety net for a
 * notification lost while the listener reconnects, so much rarer than the in-process default.
 */
export const CROSS_REPLICA_POLL_MS = 1_000
/** PostgreSQL refuses NOTIFY payloads of 8000 bytes or more; keys are sent in chunks below. */
const MAX_PAYLOAD_BYTES = 7_000
const RECONNECT_DELAY_MS = 1_000

export interface PgWakeUpsOptions {
  connectionString: string
  /** Names this replica in its notifications, so it ignores its own. */
  replicaId: string
  logger: {
    warn(fields: object, message: string): void
    info(fields: object, message: string): void
  }
  /** Called for each key another replica notified (after this replica's waiters are woken). */
  onRemote?: (key: string) => void
  reconnectDelayMs?: number
}

/** Payloads `<replica>\n<key>\n<key>...`, each under the size limit. */
export function wakePayloads(replicaId: string, keys: Iterable<string>): string[] {
  const out: string[] = []
  let current: string[] = []
  let size = Buffer.byteLength(replicaId)
  for (const key of keys) {
    const bytes = Buffer.byteLength(key) + 1
    if (current.length > 0 && size + bytes > MAX_PAYLOAD_BYTES) {
      out.push([replicaId, ...current].join('\n'))
      current = []
      size = Buffer.byteLength(replicaId)
    }
    current.push(key)
    size += bytes
  }
  if (current.length > 0) out.push([replicaId, ...current].join('\n'))
  return out
}

/** The sender and keys of a payload, or undefined for one that is not ours. */
export function parseWakePayload(payload: string): { sender: string; keys: string[] } | undefined {
  const [sender, ...keys] = payload.split('\n')
  if (!sender || keys.length === 0) return undefined
  return { sender, keys }
}

/**
 * Wake-ups across the replicas of one PostgreSQL database (docs/production.md): `notify` wakes
 * this process's waiters at once, as WakeUps does, and the keys notified in one turn of the event
 * loop go to the other replicas in one NOTIFY (more while one is being sent: they are coalesced
 * into the next). A dedicated connection LISTENs and wakes this process's waiters for the keys of
 * other replicas. When that connection is lost it is opened again; meanwhile waiters still see
 * other replicas' writes by re-reading the store every CROSS_REPLICA_POLL_MS.
 */
export class PgWakeUps extends WakeUps {
  private client: pg.Client | undefined
  private connecting: Promise<void> | undefined
  private reconnectTimer: NodeJS.Timeout | undefined
  private readonly pending = new Set<string>()
  private flushScheduled = false
  private flushing: Promise<void> | undefined
  private closed = false
  /** Listening connections opened, NOTIFYs sent and keys received (tests, diagnostics). */
  readonly stats = { connects: 0, sent: 0, received: 0 }

  constructor(private readonly options: PgWakeUpsOptions) {
    super()
  }

  /** Opens the listening connection; a failure is logged and retried, never thrown. */
  async start(): Promise<void> {
    await this.connect()
  }

  async close(): Promise<void> {
    this.closed = true
    clearTimeout(this.reconnectTimer)
    await this.connecting
    await this.flushing
    const client = this.client
    this.client = undefined
    await client?.end().catch(() => undefined)
  }

  /** Whether notifications of other replicas arrive now. */
  get listening(): boolean {
    return this.client !== undefined
  }

  override notify(key: string): void {
    super.notify(key)
    if (this.closed) return
    this.pending.add(key)
    if (this.flushScheduled) return
    this.flushScheduled = true
    setImmediate(() => {
      this.flushScheduled = false
      if (this.flushing === undefined) {
        this.flushing = this.flush().finally(() => {
          this.flushing = undefined
        })
      }
    })
  }

  private async flush(): Promise<void> {
    while (this.pending.size > 0) {
      const keys = [...this.pending]
      this.pending.clear()
      const client = this.client
      // Not listening: the other replicas' waiters see the write by re-reading the store.
      if (client === undefined) return
      try {
        for (const payload of wakePayloads(this.options.replicaId, keys)) {
          await client.query('select pg_notify($1, $2)', [WAKE_CHANNEL, payload])
          this.stats.sent += 1
        }
      } catch (error) {
        this.options.logger.warn({ err: error }, 'could not notify the other replicas')
      }
    }
  }

  private connect(): Promise<void> {
    if (this.connecting || this.closed) return this.connecting ?? Promise.resolve()
    this.connecting = this.open().finally(() => {
      this.connecting = undefined
    })
    return this.connecting
  }

  private async open(): Promise<void> {
    const { default: postgres } = await import('pg')
    const client = new postgres.Client({
      connectionString: this.options.connectionString,
      application_name: 'podyard-wake-ups',
      keepAlive: true,
    })
    let lost = false
    const onLost = (error?: Error) => {
      if (lost) return
      lost = true
      if (this.client === client) this.client = undefined
      client.removeAllListeners('notification')
      void client.end().catch(() => undefined)
      if (this.closed) return
      this.options.logger.warn(
        { err: error },
        'lost the connection that listens to the other replicas; reconnecting',
      )
      this.scheduleReconnect()
    }
    client.on('error', onLost)
    client.on('end', () => onLost())
    client.on('notification', (message) => {
      if (message.channel !== WAKE_CHANNEL || message.payload === undefined) return
      const parsed = parseWakePayload(message.payload)
      if (parsed === undefined || parsed.sender === this.options.replicaId) return
      for (const key of parsed.keys) {
        this.stats.received += 1
        super.notify(key)
        this.options.onRemote?.(key)
      }
    })
    try {
      await client.connect()
      await client.query(`listen ${WAKE_CHANNEL}`)
    } catch (error) {
      onLost(error as Error)
      return
    }
    if (this.closed || lost) {
      await client.end().catch(() => undefined)
      return
    }
    this.client = client
    this.stats.connects += 1
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer !== undefined) return
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined
      void this.connect()
    }, this.options.reconnectDelayMs ?? RECONNECT_DELAY_MS)
    this.reconnectTimer.unref()
  }
}
