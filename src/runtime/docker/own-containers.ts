import type Docker from 'dockerode'
import { SERVER_LABEL, WORKLOAD_LABEL, type ContainerInspection } from './container-spec.js'
import { ignoring } from './engine-calls.js'

/** A workload's container in use, with its inspection. */
export interface FoundContainer {
  container: Docker.Container
  inspection: ContainerInspection
}

/**
 * The containers that are the platform's on one engine: labelled with this server's id or one
 * of the platform's former ids (DockerDriverOptions.formerServerIds). Others' are invisible.
 */
export class OwnContainers {
  constructor(
    private readonly docker: Docker,
    private readonly serverId: string,
    private readonly formerServerIds?: () => Promise<readonly string[]>,
  ) {}

  /** This server's id and the platform's former ones. */
  async serverIds(): Promise<ReadonlySet<string>> {
    return new Set([this.serverId, ...((await this.formerServerIds?.()) ?? [])])
  }

  /** The engine's label filter for `ids`: exact with one id; with several, checked by the caller. */
  serverFilter(ids: ReadonlySet<string>): string {
    return ids.size === 1 ? `${SERVER_LABEL}=${this.serverId}` : SERVER_LABEL
  }

  /**
   * The containers of ours (labelled with one of `ids`) that carry `labels`, each workload's
   * to use first ahead of its others: running ones, then the newest (the last start, whose
   * ports the platform recorded), then this server's id. Others' containers are invisible.
   */
  async containersOf(labels: string[], ids?: ReadonlySet<string>): Promise<Docker.ContainerInfo[]> {
    const ours = ids ?? (await this.serverIds())
    const summaries = await this.docker.listContainers({
      all: true,
      filters: { label: [this.serverFilter(ours), ...labels] },
    })
    const stopped = (s: Docker.ContainerInfo): number => (s.State === 'running' ? 0 : 1)
    const former = (s: Docker.ContainerInfo): number =>
      s.Labels?.[SERVER_LABEL] === this.serverId ? 0 : 1
    return summaries
      .filter((s) => ours.has(s.Labels?.[SERVER_LABEL] ?? ''))
      .sort((a, b) => stopped(a) - stopped(b) || b.Created - a.Created || former(a) - former(b))
  }

  /** The container of a workload in use (containersOf's first). */
  async find(id: string): Promise<FoundContainer | undefined> {
    const summary = (await this.containersOf([`${WORKLOAD_LABEL}=${id}`]))[0]
    if (!summary) return undefined
    const container = this.docker.getContainer(summary.Id)
    const inspection = await ignoring([404], () => container.inspect())
    return inspection ? { container, inspection: inspection as ContainerInspection } : undefined
  }
}
