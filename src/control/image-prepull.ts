import type { Logger } from 'pino'
import type { DataCenter, Host } from '../domain/catalog/fleet.js'
import type { PlacementPolicy } from '../domain/catalog/placement.js'
import {
  STALE_PULL_MS,
  type HostImage,
  type HostImagePulls,
  type HostImageRepo,
  type ImagePullRequest,
} from '../domain/hosts/host-images.js'
import type { Endpoint } from '../domain/serverless/endpoint.js'
import { workerCandidates } from '../domain/serverless/worker-placement.js'
import { canPrepareImages, type RuntimeDriver } from '../runtime/driver.js'
import { AppError } from '../shared/app-error.js'
import type { Clock, TimerClock } from '../shared/clock.js'
import { ReconcileLoop } from '../shared/reconcile-loop.js'

type Credentials = { username: string; password: string }

export interface ImagePrepullDeps {
  repo: HostImageRepo
  hosts: () => readonly Host[]
  dataCenters: () => readonly DataCenter[]
  driverFor: (hostId: string) => RuntimeDriver
  /**
   * Hosts that take no new placements now (DOWN, cordoned, draining), with why; given the
   * endpoint, also those that may not take its workers (docs/serverless-workers.md).
   */
  unavailable: (endpoint?: Endpoint) => Promise<Readonly<Record<string, string>>>
  place: PlacementPolicy
  accountPools: (accountId: string) => Promise<readonly string[]>
  registryCredentials: (accountId: string, registryId: string) => Promise<Credentials | undefined>
  clock: Clock
  logger: Logger
  /** How often a running pull writes its progress (and so shows it is alive). */
  progressIntervalMs?: number
  /** Every endpoint, for the leader's catch-up (catchUp). */
  endpoints: () => Promise<readonly Endpoint[]>
  /** How often the leader looks for pulls endpoints' images still lack. */
  catchUpIntervalMs: number
  timers?: TimerClock
}

/**
 * Images pulled ahead of time (docs/fleet.md, "Images ahead of time"): an endpoint's image on
 * every Docker host that could run its workers, once it is created or its image changes, and
 * the admin's pulls for pods' images. Each pull is claimed in the store per host and image, so
 * that two replicas never pull one image on one host at once; the engine's driver joins a pull
 * in flight on this replica (a worker's start included).
 */
export class ImagePrepull implements HostImagePulls {
  private readonly running = new Set<Promise<void>>()
  private readonly catchUpLoop: ReconcileLoop

  constructor(private readonly deps: ImagePrepullDeps) {
    this.catchUpLoop = new ReconcileLoop({
      ...(deps.timers ? { clock: deps.timers } : {}),
      intervalMs: deps.catchUpIntervalMs,
      pass: async () => this.catchUp(await deps.endpoints()),
      onError: (error) =>
        deps.logger.warn({ err: error }, 'looking for images still to pull ahead of time failed'),
    })
  }

  /** The leader's catch-up loop (catchUp), a first pass at once. */
  start(): void {
    this.catchUpLoop.start({ immediate: true })
  }

  async stop(): Promise<void> {
    await this.catchUpLoop.stop()
  }

  /** The images on the hosts; a host named that the fleet lacks is NOT_FOUND, not an empty list. */
  async list(filter?: { hostId?: string; image?: string }): Promise<HostImage[]> {
    const hostId = filter?.hostId
    if (hostId !== undefined && !this.deps.hosts().some((h) => h.id === hostId))
      throw new AppError('NOT_FOUND', `host ${hostId} not found`)
    return this.deps.repo.list(filter)
  }

  /**
   * The hosts that could run a worker of the endpoint now: on a driver with images, taking
   * placements, and passing the placement's checks (GPU type or CPU flavor, CUDA, data centers,
   * labels, pools) on an empty host: what it holds now says nothing of where workers go later.
   */
  async eligibleHosts(endpoint: Endpoint): Promise<Host[]> {
    const candidates = workerCandidates(endpoint, [])
    const accountPools = await this.deps.accountPools(endpoint.accountId)
    const unplaceable = await this.deps.unavailable(endpoint)
    const dataCenters = this.deps.dataCenters()
    return this.deps
      .hosts()
      .filter(
        (host) =>
          unplaceable[host.id] === undefined &&
          canPrepareImages(this.deps.driverFor(host.id)) &&
          candidates.some(
            (c) =>
              this.deps.place(
                { hosts: [host], dataCenters, allocations: [] },
                { ...c.request, accountPools },
              ).ok,
          ),
      )
  }

  /** Pulls the endpoint's image on its eligible hosts, in the background. */
  forEndpoint(endpoint: Endpoint): void {
    this.background(async () => {
      const hosts = await this.eligibleHosts(endpoint)
      const auth = endpoint.registry
        ? await this.deps.registryCredentials(endpoint.accountId, endpoint.registry)
        : undefined
      await Promise.all(hosts.map((host) => this.pullOn(host.id, endpoint.image, auth)))
    }, `endpoint ${endpoint.id}`)
  }

  /**
   * The pulls the endpoints' images still lack: on each eligible host with no row for the
   * image (a host that was not UP when the endpoint was made or its image changed: the server
   * had just started, or the host was added, uncordoned or came back since) or with a pull left
   * PULLING by a server that stopped (no progress for STALE_PULL_MS). PRESENT and FAILED rows
   * stay as they are: a failed pull is the admin's to start again (`podyard hosts pull`).
   */
  async catchUp(endpoints: readonly Endpoint[]): Promise<void> {
    const staleBefore = this.deps.clock.now().getTime() - STALE_PULL_MS
    for (const endpoint of endpoints) {
      const hosts = await this.eligibleHosts(endpoint)
      if (hosts.length === 0) continue
      const rows = await this.deps.repo.list({ image: endpoint.image })
      const due = hosts.filter((host) => {
        const row = rows.find((r) => r.hostId === host.id)
        return !row || (row.state === 'PULLING' && Date.parse(row.updatedAt) < staleBefore)
      })
      if (due.length === 0) continue
      const auth = endpoint.registry
        ? await this.deps.registryCredentials(endpoint.accountId, endpoint.registry)
        : undefined
      for (const host of due)
        this.background(
          () => this.pullOn(host.id, endpoint.image, auth),
          `endpoint ${endpoint.id} on host ${host.id}`,
        )
    }
  }

  async pull(request: ImagePullRequest): Promise<HostImage[]> {
    const all = this.deps.hosts()
    let hostIds: string[]
    if (request.hostIds && request.hostIds.length > 0) {
      for (const id of request.hostIds) {
        if (!all.some((h) => h.id === id)) throw new AppError('NOT_FOUND', `host ${id} not found`)
        if (!canPrepareImages(this.deps.driverFor(id)))
          throw new AppError(
            'RULE_CONFLICT',
            `host ${id} runs no images (its workloads run under the process driver): nothing to pull there`,
          )
      }
      hostIds = [...new Set(request.hostIds)]
    } else {
      const unplaceable = await this.deps.unavailable()
      hostIds = all
        .filter(
          (h) => unplaceable[h.id] === undefined && canPrepareImages(this.deps.driverFor(h.id)),
        )
        .map((h) => h.id)
    }
    let auth: Credentials | undefined
    if (request.registryAuthId !== undefined) {
      auth = request.accountId
        ? await this.deps.registryCredentials(request.accountId, request.registryAuthId)
        : undefined
      if (!auth)
        throw new AppError('NOT_FOUND', `registry auth ${request.registryAuthId} not found`)
    }
    // Claimed before answering: the rows say PULLING (or the state of a pull in flight).
    const claims = await Promise.all(hostIds.map((id) => this.claim(id, request.image)))
    hostIds.forEach((hostId, i) => {
      if (claims[i])
        this.background(
          () => this.run(hostId, request.image, auth),
          `host ${hostId} image ${request.image}`,
        )
    })
    const rows = await this.deps.repo.list({ image: request.image })
    return rows.filter((r) => hostIds.includes(r.hostId))
  }

  async readiness(endpoint: Endpoint): Promise<HostImage[]> {
    const hosts = await this.eligibleHosts(endpoint)
    const rows = await this.deps.repo.list({ image: endpoint.image })
    return hosts.map(
      (host) =>
        rows.find((r) => r.hostId === host.id) ?? {
          hostId: host.id,
          image: endpoint.image,
          state: 'ABSENT' as const,
          reason: null,
          bytesDone: null,
          bytesTotal: null,
          startedAt: endpoint.updatedAt,
          updatedAt: endpoint.updatedAt,
        },
    )
  }

  /** Resolves when every pull started here so far has ended (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running])
  }

  private claim(hostId: string, image: string): Promise<boolean> {
    const now = this.deps.clock.now()
    const staleBefore = new Date(now.getTime() - STALE_PULL_MS).toISOString()
    return this.deps.repo.claim(hostId, image, now.toISOString(), staleBefore)
  }

  /** Claims and runs the pull; a pull in flight (this replica or another) is left to finish. */
  private async pullOn(hostId: string, image: string, auth: Credentials | undefined) {
    if (await this.claim(hostId, image)) await this.run(hostId, image, auth)
  }

  private async run(hostId: string, image: string, auth: Credentials | undefined): Promise<void> {
    const driver = this.deps.driverFor(hostId)
    const { repo, clock } = this.deps
    const now = () => clock.now().toISOString()
    const interval = this.deps.progressIntervalMs ?? 1_000
    let latest: { done: number; total: number } | undefined
    let written: Promise<void> = Promise.resolve()
    // Written at most once per interval, and at least that often, so that the row stays fresh
    // (a pull whose row went stale may be claimed again).
    const timer = setInterval(() => {
      const at = now()
      written = written.then(() =>
        latest
          ? repo.progress(hostId, image, latest.done, latest.total, at)
          : repo.progress(hostId, image, 0, 0, at),
      )
    }, interval)
    try {
      if (!canPrepareImages(driver)) throw new Error('the host runs no images')
      await driver.prepareImage(image, auth, (done, total) => {
        latest = { done, total }
      })
      clearInterval(timer)
      await written.catch(() => undefined)
      if (latest) await repo.progress(hostId, image, latest.done, latest.total, now())
      await repo.finish(hostId, image, 'PRESENT', null, now())
    } catch (error) {
      clearInterval(timer)
      await written.catch(() => undefined)
      const reason = (error as Error).message
      this.deps.logger.warn({ hostId, image, reason }, 'image pull ahead of time failed')
      await repo.finish(hostId, image, 'FAILED', reason, now())
    }
  }

  private background(work: () => Promise<void>, what: string): void {
    const task = work()
      .catch((error: unknown) =>
        this.deps.logger.warn({ err: error }, `image pull ahead of time for ${what} failed`),
      )
      .finally(() => this.running.delete(task))
    this.running.add(task)
  }
}
