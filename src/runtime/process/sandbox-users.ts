import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import path from 'node:path'

/**
 * First uid (and gid) of sandboxed workloads when the server is root. Far above the users and
 * system users of a distribution (< 60 000), systemd's dynamic users (61 184..65 519) and the
 * ranges systemd-nspawn hands to containers (524 288..1 879 048 191), and below 2^31, which
 * some tools read as a negative number.
 */
export const DEFAULT_SANDBOX_UID_BASE = 1_900_000_000
/** Tenants past this many would leave the range below 2^31. */
const MAX_TENANTS = 100_000_000

interface UserTable {
  /** Tenant name -> its uid, in the order they were first seen. */
  tenants: Record<string, number>
}

/**
 * The uid each tenant's sandboxed workloads run as: `base` for workloads without a tenant,
 * then base + 1, base + 2, ... for each tenant the first time it starts a workload. Kept in a
 * file of the state directory so that a restarted server gives a tenant the uid that owns its
 * volumes' files. One writer at a time: only the active driver starts workloads.
 */
export class SandboxUsers {
  private queue: Promise<unknown> = Promise.resolve()

  constructor(
    private readonly file: string,
    private readonly base: number = DEFAULT_SANDBOX_UID_BASE,
  ) {}

  uidOf(tenant: string | undefined): Promise<number> {
    if (tenant === undefined) return Promise.resolve(this.base)
    const run = this.queue.then(async () => {
      const table = await this.read()
      const known = table.tenants[tenant]
      if (known !== undefined) return known
      const uid = Math.max(this.base, ...Object.values(table.tenants)) + 1
      if (uid > this.base + MAX_TENANTS) throw new Error('no sandbox uid left for another tenant')
      table.tenants[tenant] = uid
      await mkdir(path.dirname(this.file), { recursive: true })
      await writeFile(`${this.file}.tmp`, `${JSON.stringify(table, null, 2)}\n`)
      await rename(`${this.file}.tmp`, this.file)
      return uid
    })
    this.queue = run.catch(() => undefined)
    return run
  }

  private async read(): Promise<UserTable> {
    let text: string
    try {
      text = await readFile(this.file, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { tenants: {} }
      throw error
    }
    const parsed = JSON.parse(text) as Partial<UserTable>
    const tenants: Record<string, number> = {}
    for (const [name, uid] of Object.entries(parsed.tenants ?? {})) {
      if (Number.isInteger(uid)) tenants[name] = uid
    }
    return { tenants }
  }
}
