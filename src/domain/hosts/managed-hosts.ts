import { AppError } from '../../shared/app-error.js'
import { LOCAL_HOST_ID, type DataCenter, type Host } from '../catalog/fleet.js'
import { FleetError, parseHostDeclarations } from '../catalog/fleet-parse.js'
import {
  openCredentials,
  sealCredentials,
  withoutCredentialText,
  type CredentialBox,
} from './host-credentials.js'
import type { PodOnHost } from './host-service.js'
import type { ManagedHostRepo } from './ports.js'

/** What still holds a host: its pods (not terminated) and serverless workers. */
export interface HostUsers {
  pods: PodOnHost[]
  workerIds: string[]
}

export interface ManagedHostsDeps {
  repo: ManagedHostRepo
  /** Seals the credentials given inline (PEM text) before they are stored. */
  box: CredentialBox
  /** The hosts of the configured fleet (fleet file or built-in, and `local`): read-only here. */
  configuredHosts: readonly Host[]
  dataCenters: readonly DataCenter[]
  /** Makes the running fleet the configured hosts plus these (sorted by id). */
  apply: (managed: Host[]) => Promise<void>
  usersOf: (hostId: string) => Promise<HostUsers>
  now: () => string
}

/** One change `fleet apply` makes. */
export interface FleetChange {
  action: 'add' | 'update' | 'remove'
  hostId: string
  /** For updates: the fields that change, as `field: old -> new`. */
  fields?: string[]
}

/** Fields of a Host that a declaration sets (the rest, withheldGpu, is computed). */
const DECLARED_FIELDS = [
  'dataCenterId',
  'cloud',
  'gpu',
  'vcpus',
  'memoryGb',
  'diskGb',
  'driver',
  'cpuFlavors',
  'simulated',
  'docker',
  'publicIp',
  'labels',
] as const

const show = (value: unknown) => (value === undefined ? '(none)' : JSON.stringify(value))

/**
 * The hosts the admin adds, changes and removes at runtime (docs/fleet.md, "Adding a machine"),
 * kept in the database so that every replica runs the same fleet. The configured fleet's hosts
 * (the fleet file, the built-in fleets, this machine) are read-only here: they change where
 * they are declared.
 */
export class ManagedHostService {
  private revision = -1
  /** Syncs take turns: two at once would both build the new hosts' runtimes. */
  private syncing: Promise<unknown> = Promise.resolve()
  private readonly configuredIds: ReadonlySet<string>

  constructor(private readonly deps: ManagedHostsDeps) {
    this.configuredIds = new Set(deps.configuredHosts.map((h) => h.id))
  }

  /** Whether the host was added at runtime (not declared in the configured fleet). */
  isManaged(hostId: string): boolean {
    return !this.configuredIds.has(hostId)
  }

  /** The hosts added at runtime, their inline credentials opened (for engines, never for reads). */
  async list(): Promise<Host[]> {
    return (await this.deps.repo.list()).map((h) => openCredentials(h, this.deps.box))
  }

  /**
   * Reads the store's revision and, when another replica (or this one) changed the hosts since
   * the last look, makes the running fleet the store's. True when it changed anything.
   */
  sync(): Promise<boolean> {
    const run = this.syncing.then(() => this.syncNow())
    this.syncing = run.catch(() => undefined)
    return run
  }

  private async syncNow(): Promise<boolean> {
    const revision = await this.deps.repo.revision()
    if (revision === this.revision) return false
    const hosts = await this.list()
    await this.deps.apply(hosts.filter((h) => !this.configuredIds.has(h.id)))
    this.revision = revision
    return true
  }

  async add(input: unknown): Promise<Host> {
    const host = this.parse([input])[0]!
    this.refuseConfigured(host.id, 'added')
    if (!(await this.deps.repo.insert(this.sealed(host), this.deps.now())))
      throw new AppError('INVALID_STATE', `host ${host.id} exists already`)
    await this.sync()
    return host
  }

  /**
   * Changes the fields given; `null` removes an optional one (docker, publicIp, labels; gpu:
   * none). `labels` merges: each key given is set, a key given null is removed.
   */
  async update(hostId: string, patch: Record<string, unknown>): Promise<Host> {
    this.refuseConfigured(hostId, 'changed')
    const stored = (await this.list()).find((h) => h.id === hostId)
    if (!stored) throw new AppError('NOT_FOUND', `host ${hostId} not found`)
    if ('id' in patch && patch.id !== hostId)
      throw new AppError(
        'RULE_CONFLICT',
        'a host id cannot change: remove the host and add it again',
      )
    const host = this.parse([mergeDeclaration(stored, patch)])[0]!
    const refusal = await this.changeRefusal(stored, host)
    if (refusal) throw new AppError('INVALID_STATE', refusal)
    if (!(await this.deps.repo.update(this.sealed(host), this.deps.now())))
      throw new AppError('NOT_FOUND', `host ${hostId} not found`)
    await this.sync()
    return host
  }

  /** Refused while pods or workers are on the host: drain it and stop or terminate them. */
  async remove(hostId: string): Promise<void> {
    this.refuseConfigured(hostId, 'removed')
    const stored = (await this.deps.repo.list()).some((h) => h.id === hostId)
    if (!stored) throw new AppError('NOT_FOUND', `host ${hostId} not found`)
    const users = await this.deps.usersOf(hostId)
    if (users.pods.length > 0 || users.workerIds.length > 0)
      throw new AppError('INVALID_STATE', usersRefusal(hostId, users))
    if (!(await this.deps.repo.remove(hostId)))
      throw new AppError('NOT_FOUND', `host ${hostId} not found`)
    await this.sync()
  }

  /**
   * What applying a declarative list of hosts would change: hosts of the list missing from the
   * database are added, those that differ updated, database hosts not in the list removed.
   * Hosts of the configured fleet may not be in the list.
   */
  async plan(declarations: unknown): Promise<{ hosts: Host[]; changes: FleetChange[] }> {
    const hosts = this.parse(declarations)
    for (const host of hosts) this.refuseConfigured(host.id, 'applied')
    const stored = new Map((await this.list()).map((h) => [h.id, h]))
    const changes: FleetChange[] = []
    const wanted = new Set<string>()
    for (const host of hosts) {
      wanted.add(host.id)
      const before = stored.get(host.id)
      if (!before) changes.push({ action: 'add', hostId: host.id })
      else {
        const fields = DECLARED_FIELDS.filter(
          (f) => JSON.stringify(before[f]) !== JSON.stringify(host[f]),
        ).map((f) => fieldChange(before, host, f))
        if (fields.length > 0) changes.push({ action: 'update', hostId: host.id, fields })
      }
    }
    for (const id of stored.keys()) {
      if (!wanted.has(id)) changes.push({ action: 'remove', hostId: id })
    }
    return { hosts, changes }
  }

  /**
   * Applies the list as plan() shows it. Removals and changes are checked first, all of them,
   * so that a host still in use refuses the whole apply before anything changed.
   */
  async apply(declarations: unknown): Promise<FleetChange[]> {
    const { hosts, changes } = await this.plan(declarations)
    const refusals: string[] = []
    const stored = new Map((await this.list()).map((h) => [h.id, h]))
    const byId = new Map(hosts.map((h) => [h.id, h]))
    for (const change of changes) {
      if (change.action === 'remove') {
        const users = await this.deps.usersOf(change.hostId)
        if (users.pods.length > 0 || users.workerIds.length > 0)
          refusals.push(usersRefusal(change.hostId, users))
      } else if (change.action === 'update') {
        const before = stored.get(change.hostId)
        const refusal = before && (await this.changeRefusal(before, byId.get(change.hostId)!))
        if (refusal) refusals.push(refusal)
      }
    }
    if (refusals.length > 0) throw new AppError('INVALID_STATE', refusals.join('; '))
    const at = this.deps.now()
    for (const change of changes) {
      if (change.action === 'add')
        await this.deps.repo.insert(this.sealed(byId.get(change.hostId)!), at)
      else if (change.action === 'update')
        await this.deps.repo.update(this.sealed(byId.get(change.hostId)!), at)
      else await this.deps.repo.remove(change.hostId)
    }
    await this.sync()
    return changes
  }

  /** Why the change from `stored` to `host` is refused while workloads are on it, or null. */
  private async changeRefusal(stored: Host, host: Host): Promise<string | null> {
    const held = changesRefusedInUse(stored, host)
    if (held.length === 0) return null
    const users = await this.deps.usersOf(host.id)
    if (users.pods.length === 0 && users.workerIds.length === 0) return null
    return (
      `host ${host.id} cannot change ${held.join(', ')} while it still has ` +
      `${usersNamed(users).join(', ')}: its capacity may grow, but it shrinks or moves ` +
      `only empty (drain it with podyard hosts drain ${host.id}, terminate its pods)`
    )
  }

  private sealed(host: Host) {
    return sealCredentials(host, this.deps.box)
  }

  private parse(declarations: unknown): Host[] {
    try {
      return parseHostDeclarations(declarations, this.deps.dataCenters, 'hosts')
    } catch (error) {
      if (!(error instanceof FleetError)) throw error
      const single = Array.isArray(declarations) && declarations.length === 1
      const errors = error.errors.map((e) =>
        single
          ? e.replace(/^fleet hosts\[0\]\.?/, '').replace(/^: /, '')
          : e.replace(/^fleet /, ''),
      )
      throw new AppError('VALIDATION_FAILED', `invalid host: ${errors.join('; ')}`, { errors })
    }
  }

  private refuseConfigured(hostId: string, what: string): void {
    if (hostId === LOCAL_HOST_ID)
      throw new AppError(
        'INVALID_STATE',
        `host ${LOCAL_HOST_ID} is this machine: it cannot be ${what}`,
      )
    if (this.configuredIds.has(hostId))
      throw new AppError(
        'INVALID_STATE',
        `host ${hostId} is declared in the configured fleet (the fleet setting): it is changed there, not ${what} here`,
      )
  }
}

function usersNamed(users: HostUsers): string[] {
  return [
    ...users.pods.map((p) => `pod ${p.id} (${p.status})`),
    ...users.workerIds.map((w) => `worker ${w}`),
  ]
}

/** Fields where the pods and workers placed on a host run: none may change under them. */
const WHERE_IT_RUNS = [
  'dataCenterId',
  'cloud',
  'driver',
  'simulated',
  'docker',
  'publicIp',
] as const
/** Capacity a placement counts on: it may grow under placed workloads, never shrink. */
const CAPACITY = ['vcpus', 'memoryGb', 'diskGb'] as const

/**
 * The changes from `before` to `after` refused while workloads are placed on the host, as
 * `field: old -> new`. Shrinking is refused whatever is placed: what a pod was given is not
 * re-checked against the new capacity, so shrinking is for an empty host.
 */
function changesRefusedInUse(before: Host, after: Host): string[] {
  const differs = (f: (typeof DECLARED_FIELDS)[number]) =>
    JSON.stringify(before[f]) !== JSON.stringify(after[f])
  const fields: (typeof DECLARED_FIELDS)[number][] = [
    ...WHERE_IT_RUNS.filter(differs),
    ...CAPACITY.filter((f) => after[f] < before[f]),
  ]
  const gpuBefore = before.gpu
  const gpuAfter = after.gpu
  if (
    gpuBefore &&
    (!gpuAfter ||
      gpuAfter.typeId !== gpuBefore.typeId ||
      gpuAfter.count < gpuBefore.count ||
      gpuAfter.cudaVersion !== gpuBefore.cudaVersion)
  )
    fields.push('gpu')
  return fields.map((f) => fieldChange(before, after, f))
}

/** `field: old -> new`, credentials given inline shown by a digest, never their text. */
function fieldChange(before: Host, after: Host, field: (typeof DECLARED_FIELDS)[number]): string {
  const shown = (host: Host) => show(withoutCredentialText(host)[field])
  return `${field}: ${shown(before)} -> ${shown(after)}`
}

function usersRefusal(hostId: string, users: HostUsers): string {
  const named = usersNamed(users)
  return (
    `host ${hostId} still has ${named.join(', ')}: drain it (podyard hosts drain ${hostId}), ` +
    'terminate its pods (a stopped pod keeps its place), then remove it'
  )
}

/** The stored declaration with the patch's fields; null removes an optional field. */
function mergeDeclaration(stored: Host, patch: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...stored }
  delete merged.withheldGpu
  // driver and simulated follow from docker unless the patch says them too.
  if ('docker' in patch) {
    if (!('driver' in patch)) delete merged.driver
    if (!('simulated' in patch)) delete merged.simulated
  }
  for (const [field, value] of Object.entries(patch)) {
    if (value === null && field !== 'gpu') delete merged[field]
    else if (field === 'labels') merged.labels = mergeLabels(stored.labels, value)
    else merged[field] = value
  }
  return merged
}

/** Labels changed as a merge patch: each key given is set, one given null removed. */
function mergeLabels(stored: Host['labels'], patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch
  const merged: Record<string, unknown> = { ...stored }
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete merged[key]
    else merged[key] = value
  }
  return merged
}
