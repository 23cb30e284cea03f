import type { EndpointService } from './endpoint-service.js'
import type { ReleaseDiffEntry, ReleaseRepo } from './release.js'
import type { WorkerRepo } from './worker.js'

/** RunPod's v2 `ListEndpointReleasesResponse`. */
export interface ReleaseList {
  endpointVersion: number
  rollout: {
    /** Some worker still runs an older version. */
    inProgress: boolean
    workersOnLatest: number
    workersTotal: number
    /** 0 without workers. */
    percentOnLatest: number
  }
  releases: Array<{
    id: string
    version: number
    source: 'MANUAL'
    buildId: null
    createdByUserId: string | null
    /** Workers running this version now. */
    workerCount: number
    createdAt: string
    diff: ReleaseDiffEntry[]
  }>
}

export interface ReleaseServiceDeps {
  endpoints: Pick<EndpointService, 'get'>
  releases: ReleaseRepo
  workers: Pick<WorkerRepo, 'listByEndpoint'>
  /** The user of an account (accounts have one): who made its releases. */
  userOf: (accountId: string) => Promise<string | null>
}

/** An endpoint's versions and how far its workers have rolled to the latest. */
export class ReleaseService {
  constructor(private readonly deps: ReleaseServiceDeps) {}

  async list(accountId: string, endpointId: string): Promise<ReleaseList> {
    const endpoint = await this.deps.endpoints.get(accountId, endpointId)
    const workers = (await this.deps.workers.listByEndpoint(endpoint.id)).filter(
      (w) => w.phase !== 'STOPPED',
    )
    const onVersion = (version: number) => workers.filter((w) => w.version === version).length
    const onLatest = onVersion(endpoint.version)
    const user = await this.deps.userOf(endpoint.accountId)
    return {
      endpointVersion: endpoint.version,
      rollout: {
        inProgress: onLatest < workers.length,
        workersOnLatest: onLatest,
        workersTotal: workers.length,
        percentOnLatest: workers.length === 0 ? 0 : Math.round((onLatest * 100) / workers.length),
      },
      releases: (await this.deps.releases.listByEndpoint(endpoint.id)).map((release) => ({
        id: release.id,
        version: release.version,
        source: 'MANUAL',
        buildId: null,
        createdByUserId: user,
        workerCount: onVersion(release.version),
        createdAt: release.createdAt,
        diff: release.diff,
      })),
    }
  }
}
