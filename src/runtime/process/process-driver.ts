import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { AppError } from '../../shared/app-error.js'
import { NO_EGRESS_RULES, type EgressRules } from '../../shared/egress-cidrs.js'
import { systemClock, type Clock } from '../../shared/clock.js'
import type {
  LogLine,
  LogQuery,
  RuntimeDriver,
  WorkloadIsolation,
  WorkloadFilter,
  WorkloadSpec,
  WorkloadState,
  WorkloadStats,
  WorkloadWatcher,
} from '../driver.js'
import { DEFAULT_WORKLOAD_LOG_MAX_BYTES, hasLabels } from '../driver.js'
import { joinGlobalNetwork } from './global-network.js'
import { openWorkloadCgroup, unenforcedBy } from './cgroup-files.js'
import { launchInCgroup } from './cgroup-plan.js'
import { DiskBounds, type DiskBoundMode } from '../disk-bounds/disk-bounds.js'
import { logBudgetOf, workloadLogFiles } from './log-files.js'
import { LogFollower } from './log-follower.js'
import { logLineOf } from './log-lines.js'
import { readLogTail } from './log-tail.js'
import { namespaceName, namespacePath, openPodNetwork } from './pod-network.js'
import { currentBootId, ProcessTable, signalGroup } from './process-group.js'
import { DEFAULT_SANDBOX_UID_BASE } from './sandbox-users.js'
import { groupOf, WorkloadTracking } from './tracked-workload.js'
import {
  WorkloadContainment,
  type PodNetworkMode,
  type SandboxMode,
} from './workload-containment.js'
import { checkSpec, prepareDisks, removeContainerDisk } from './workload-disks.js'
import {
  EXIT_STATUS_FILE,
  HOSTS_FILE,
  isMissing,
  OUT_OF_MEMORY_FILE,
  workloadDir,
  workloadFile,
} from './workload-files.js'
import {
  buildLaunch,
  DEFAULT_IDLE_COMMAND,
  resolveCommand,
  sandboxHostsText,
} from './workload-launch.js'
import { isValidWorkloadId, persistedSpecOf, type WorkloadRecord } from './workload-record.js'
import { WorkloadRegistry } from './workload-registry.js'
import { spawnDetached } from './workload-spawn.js'
import { measureWorkload } from './workload-stats.js'
import { DEFAULT_DISK_WRITE_RULE, type DiskWriteRule } from '../workload-limits.js'

export type { PodNetworkMode, SandboxMode } from './workload-containment.js'

export interface ProcessDriverOptions {
  /** Where each workload keeps state.json, its log files (log-files.ts) and its exit status. */
  stateDir: string
  /** Image reference -> shell command, for specs without a command of their own. */
  images?: Record<string, string>
  /** What a workload with neither command nor mapped image runs (DEFAULT_IDLE_COMMAND). */
  idleCommand?: string
  clock?: Clock
  /** 'auto' (default): bubblewrap when a working bwrap is on PATH, else none. */
  sandbox?: SandboxMode
  /** The bwrap executable; default: the one on PATH. */
  bwrapPath?: string
  /**
   * Executables that `images` commands run by their host path (the server's Node.js): a
   * sandbox shows those outside its system directories read-only at that path.
   */
  hostExecutables?: readonly string[]
  /** First uid of sandboxed workloads when the server is root (sandbox-users.ts). */
  sandboxUidBase?: number
  /** How often running workloads' output is copied into their logs (ms). */
  logPollMs?: number
  /**
   * What each workload's log may take on disk (output.log and the numbered log together, at
   * rest): past it the oldest lines go (log-files.ts). DEFAULT_WORKLOAD_LOG_MAX_BYTES by default.
   */
  logMaxBytes?: number
  /** The network of sandboxed workloads (default isolated; pod-network.ts). */
  network?: PodNetworkMode
  /** Where isolated workloads may connect out (config `containment.egress`); default: anywhere. */
  egress?: EgressRules
  /**
   * `auto`: container disks and volumes bounded by loop-mounted images where the host allows
   * it (disk-bounds.ts); `none` (default): unbounded, reported as an unenforced limit.
   */
  diskBound?: DiskBoundMode
  /** Only disk images under this directory are swept after a crash; default: stateDir's parent. */
  diskImagesUnder?: string
  /**
   * The disk bounds to use instead of making its own from diskBound and diskImagesUnder: the
   * same instance as this machine's docker driver, so that the two never mount one network
   * volume twice.
   */
  disks?: DiskBounds
  /**
   * Each workload's disk write limits per vCPU (containment.diskWrite), on the disk of the
   * state directory, in its cgroup; DEFAULT_DISK_WRITE_RULE by default.
   */
  diskWriteRule?: DiskWriteRule
}

export const DEFAULT_STOP_GRACE_MS = 10_000
export const DEFAULT_LOG_POLL_MS = 250

/** Processes an exited workload left behind are stopped quickly before it is started again. */
const LEFTOVER_GRACE_MS = 1_000

/**
 * Runs each workload as a detached process group on this host: no images, no resource limits,
 * optionally inside bubblewrap. Workloads outlive the server; a new driver on the same state
 * directory adopts them. See docs/runtime.md. This class coordinates: the workloads it knows
 * and their ends are workload-registry.ts's, the sandbox, network and cgroup choices
 * workload-containment.ts's, stopping workload-stop.ts's, measuring workload-stats.ts's, the
 * record and log pumping tracked-workload.ts's, the disks workload-disks.ts's.
 */
export class ProcessDriver implements RuntimeDriver, WorkloadWatcher {
  readonly name = 'process'

  private readonly stateDir: string
  private readonly images: Readonly<Record<string, string>>
  private readonly idleCommand: string
  private readonly clock: Clock
  private readonly logPollMs: number
  private readonly processes = new ProcessTable()
  private readonly locks = new Map<string, Promise<unknown>>()
  private readonly closing = new AbortController()
  private readonly containment: WorkloadContainment
  private readonly tracking: WorkloadTracking
  private readonly registry: WorkloadRegistry
  private readonly disks: DiskBounds
  private diskSweep: Promise<unknown> | undefined

  constructor(options: ProcessDriverOptions) {
    this.stateDir = path.resolve(options.stateDir)
    this.images = { ...options.images }
    this.idleCommand = options.idleCommand ?? DEFAULT_IDLE_COMMAND
    this.clock = options.clock ?? systemClock
    this.logPollMs = options.logPollMs ?? DEFAULT_LOG_POLL_MS
    this.tracking = new WorkloadTracking({
      stateDir: this.stateDir,
      clock: this.clock,
      logBudget: logBudgetOf(options.logMaxBytes ?? DEFAULT_WORKLOAD_LOG_MAX_BYTES),
      logPollMs: this.logPollMs,
      closing: this.closing.signal,
    })
    this.containment = new WorkloadContainment({
      stateDir: this.stateDir,
      sandboxMode: options.sandbox ?? 'auto',
      bwrapPath: options.bwrapPath,
      hostExecutables: options.hostExecutables ?? [],
      sandboxUidBase: options.sandboxUidBase ?? DEFAULT_SANDBOX_UID_BASE,
      networkMode: options.network ?? 'isolated',
      egress: options.egress ?? NO_EGRESS_RULES,
      diskWriteRule: options.diskWriteRule ?? DEFAULT_DISK_WRITE_RULE,
    })
    this.registry = new WorkloadRegistry({
      stateDir: this.stateDir,
      clock: this.clock,
      tracking: this.tracking,
      containment: this.containment,
      processes: this.processes,
      closing: this.closing.signal,
    })
    this.disks =
      options.disks ??
      new DiskBounds({
        mode: options.diskBound ?? 'none',
        root: options.diskImagesUnder ?? path.dirname(this.stateDir),
        probeDir: path.dirname(this.stateDir),
      })
    // Shared with this machine's docker driver: its releases leave this driver's volumes.
    if (options.disks) this.disks.claimAlso((except) => this.diskClaimsOfOthers(except))
  }

  /**
   * Several server replicas on one data directory (docs/production.md): only the one that runs
   * the workloads (the leader) is active: it keeps them in memory, copies their output into
   * their logs and records how they ended. An inactive driver reads their state and logs
   * afresh from the files on each call and writes nothing, so that two processes never append
   * the same lines to a log or overwrite each other's state.json. A driver is active from its
   * construction (one server alone).
   */
  setActive(active: boolean): void {
    this.registry.setActive(active)
  }

  /**
   * Calls `listener` with a workload's id when it ended on its own (or was found ended): its
   * own child's exit at once, an adopted one's within ADOPTED_POLL_MS. Only while active.
   */
  watch(listener: (id: string) => void): () => void {
    return this.registry.watch(listener)
  }

  /** Reads of the whole process table so far (stats and stops share them). */
  get processTableReads(): number {
    return this.processes.reads
  }

  /** The sandbox new workloads get: decided once, on first use. */
  async activeSandbox(): Promise<'none' | 'bubblewrap'> {
    return (await this.containment.sandbox()) === null ? 'none' : 'bubblewrap'
  }

  async isolation(): Promise<WorkloadIsolation> {
    const cgroups = await this.containment.cgroups()
    await this.sweepDisks()
    return {
      ...(await this.containment.sandboxIsolation()),
      unenforced: [...unenforcedBy(cgroups), ...(await this.disks.unenforced())],
    }
  }

  /**
   * Once, before this driver mounts anything: unmounts the disk images that no workload of the
   * state directory claims (a server that crashed, or whose workloads were removed meanwhile).
   */
  private sweepDisks(): Promise<unknown> {
    if (!this.registry.active) return Promise.resolve()
    this.diskSweep ??= (async () => {
      await this.disks.sweep(await this.diskClaimsOfOthers(undefined))
    })().catch(() => undefined)
    return this.diskSweep
  }

  /** The mount points of the bounded disks of the state directory's workloads but `except`. */
  private async diskClaimsOfOthers(except: string | undefined): Promise<Set<string>> {
    const names = await readdir(this.stateDir).catch(() => [] as string[])
    const specs = []
    for (const id of names.filter((name) => isValidWorkloadId(name) && name !== except)) {
      const tracked = await this.registry.load(id).catch(() => undefined)
      if (tracked) specs.push(tracked.record.spec)
    }
    return DiskBounds.claimedBy(specs)
  }

  async start(spec: WorkloadSpec): Promise<WorkloadState> {
    checkSpec(spec, this.stateDir)
    return this.exclusive(spec.id, () => this.startNow(spec))
  }

  stop(id: string, options: { graceMs?: number } = {}): Promise<void> {
    return this.exclusive(id, async () => {
      const tracked = await this.registry.load(id)
      if (tracked) await this.registry.stopNow(tracked, options.graceMs ?? DEFAULT_STOP_GRACE_MS)
    })
  }

  async inspect(id: string): Promise<WorkloadState | undefined> {
    const tracked = await this.registry.load(id)
    return tracked && this.registry.stateOf(tracked)
  }

  async list(filter?: WorkloadFilter): Promise<WorkloadState[]> {
    let names: string[]
    try {
      names = await readdir(this.stateDir)
    } catch (error) {
      if (isMissing(error)) return []
      throw error
    }
    const states = await Promise.all(
      names.filter(isValidWorkloadId).map(async (id) => {
        const tracked = await this.registry.load(id)
        return tracked && hasLabels(tracked.record.spec.labels, filter)
          ? this.registry.stateOf(tracked)
          : undefined
      }),
    )
    return states
      .filter((s): s is WorkloadState => s !== undefined)
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  }

  /** Measured from reads of the process table shared with other calls (workload-stats.ts). */
  async stats(id: string): Promise<WorkloadStats | undefined> {
    const tracked = await this.registry.load(id)
    return tracked && measureWorkload(tracked, this.processes)
  }

  async readLogs(id: string, query: LogQuery = {}): Promise<LogLine[]> {
    const tracked = await this.registry.load(id)
    if (!tracked) return []
    if (this.registry.active)
      await tracked.pump.pump(!(await this.registry.isRunning(tracked.record)))
    // From the end backwards: a tail costs what it returns, not the size of the log.
    return (await readLogTail(workloadLogFiles(this.dir(id)), query)).map(logLineOf)
  }

  async *followLogs(id: string, afterSeq: number, signal: AbortSignal): AsyncIterable<LogLine> {
    const stopped = AbortSignal.any([signal, this.closing.signal])
    // Reads from where it was, a chunk at a time, never the whole log.
    const follower = new LogFollower(workloadLogFiles(this.dir(id)), afterSeq)
    while (!stopped.aborted) {
      const tracked = await this.registry.load(id)
      if (!tracked) return
      // Read the phase before pumping: a workload seen exited has written everything, so
      // this pass delivers its last lines and following can end.
      const running = await this.registry.isRunning(tracked.record)
      if (this.registry.active) await tracked.pump.pump(!running)
      for (let atEnd = false; !atEnd;) {
        const batch = await follower.read()
        for (const entry of batch.entries) {
          if (stopped.aborted) return
          yield logLineOf(entry)
        }
        atEnd = batch.atEnd
      }
      if (!running) return
      await sleep(this.logPollMs, undefined, { signal: stopped }).catch(() => undefined)
    }
  }

  remove(id: string): Promise<void> {
    return this.exclusive(id, async () => {
      const tracked = await this.registry.load(id)
      if (tracked) {
        // Its log and state go with it: how it ended is not written down first.
        await this.registry.stopNow(tracked, DEFAULT_STOP_GRACE_MS, false)
        tracked.removed = true
        this.registry.forget(tracked)
        // Only a network volume is shared with other workloads: what they claim (every
        // workload's state file read, a thousand reads per pod removed on a busy host) is asked
        // only when the workload mounts one.
        const { spec } = tracked.record
        const sharesVolume = spec.mounts.some((mount) => mount.kind === 'network')
        await removeContainerDisk(
          this.disks,
          spec,
          sharesVolume ? await this.diskClaimsOfOthers(id) : new Set(),
        )
      }
      if (isValidWorkloadId(id)) {
        await rm(this.dir(id), { recursive: true, force: true, maxRetries: 3 })
      }
    })
  }

  /** Ends timers and followers; the driver still answers (reading logs on demand). */
  async close(): Promise<void> {
    this.closing.abort()
    this.registry.forgetAll()
  }

  // --- starting ---------------------------------------------------------------------------

  private async startNow(spec: WorkloadSpec): Promise<WorkloadState> {
    const existing = await this.registry.load(spec.id)
    if (existing) {
      if (await this.registry.isRunning(existing.record)) {
        throw new AppError('INVALID_STATE', `workload ${spec.id} is already running`)
      }
      await this.registry.stopNow(existing, LEFTOVER_GRACE_MS)
    }
    const sandbox = await this.containment.sandbox()
    await this.sweepDisks()
    await prepareDisks(this.disks, spec)
    await mkdir(this.dir(spec.id), { recursive: true })
    const exitStatusFile = this.file(spec.id, EXIT_STATUS_FILE)
    await rm(exitStatusFile, { force: true })
    await rm(this.file(spec.id, OUT_OF_MEMORY_FILE), { force: true })
    const identity =
      sandbox &&
      (await this.containment.prepareSandbox(spec, sandbox, (key, op) => this.exclusive(key, op)))
    const network = sandbox && (await this.containment.network())
    const netns = network ? namespaceName(this.stateDir, spec.id) : null
    if (network && netns) await openPodNetwork(network, netns, spec)
    // An account's globally networked pods share a bridge of their own (global-network.ts).
    const global =
      network && netns && spec.network && !spec.hostNetwork
        ? await joinGlobalNetwork(
            network.ipPath,
            this.stateDir,
            spec.id,
            spec.network,
            netns,
          ).catch(async (error: unknown) => {
            await this.releaseNetwork(spec.id)
            throw error
          })
        : null

    const cgroups = await this.containment.cgroups()
    const cgroup = cgroups.ok ? await openWorkloadCgroup(cgroups, spec) : null
    const { command } = resolveCommand(spec, this.images, this.idleCommand)
    const built = buildLaunch(spec, {
      command,
      exitStatusFile,
      sandbox: sandbox && identity ? { sandbox, identity } : null,
      netns:
        network && netns ? { nsenterPath: network.nsenterPath, path: namespacePath(netns) } : null,
      ...(global ? { hostsDir: global.hostsDir } : {}),
      ...(sandbox && !global ? { hostsFile: await this.writeHostsFile(spec.id) } : {}),
      hostPath: process.env.PATH,
    })
    const launch = cgroup ? launchInCgroup(built, cgroup.procsFiles) : built
    const output = workloadLogFiles(this.dir(spec.id)).output
    const { pid, startTicks } = await spawnDetached(spec.id, launch, output, (exited) =>
      this.registry.childExited(spec.id, exited),
    ).catch(async (error: unknown) => {
      if (netns || cgroup) await this.releaseNetwork(spec.id)
      await this.disks.unmountAll(spec).catch(() => undefined)
      throw error
    })
    // Its environment (worker keys) and registry credentials are never written to disk.
    const record: WorkloadRecord = {
      spec: persistedSpecOf(spec),
      pid,
      pgid: pid,
      processStartTicks: startTicks,
      bootId: currentBootId(),
      sandbox: sandbox === null ? 'none' : 'bubblewrap',
      ...(identity ? { user: { uid: identity.uid, gid: identity.gid } } : {}),
      startedAt: this.clock.now().toISOString(),
    }
    const tracked = existing ?? this.tracking.track(record)
    tracked.record = record
    tracked.ended = undefined
    tracked.settled = false
    tracked.cpu = undefined
    this.registry.started(tracked)
    try {
      await this.tracking.save(tracked)
    } catch (error) {
      // Unrecorded, nobody could ever find and stop it.
      signalGroup(groupOf(record), [], 'SIGKILL')
      this.registry.forget(tracked)
      throw error
    }
    this.tracking.startPumping(tracked)
    return this.registry.stateOf(tracked)
  }

  /** A workload's network namespace and cgroup are gone with it (workload-containment.ts). */
  private releaseNetwork(id: string): Promise<void> {
    return this.registry.releaseNetwork(id)
  }

  // --- files ------------------------------------------------------------------------------

  private dir(id: string): string {
    return workloadDir(this.stateDir, id)
  }

  /** Writes the workload's /etc/hosts (the host's and its own name); returns its path. */
  private async writeHostsFile(id: string): Promise<string> {
    const file = this.file(id, HOSTS_FILE)
    const hostHosts = await readFile('/etc/hosts', 'utf8').catch(
      () => '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n',
    )
    await writeFile(file, sandboxHostsText(hostHosts, id), { mode: 0o644 })
    return file
  }

  private file(id: string, name: string): string {
    return workloadFile(this.stateDir, id, name)
  }

  /** Runs operations on one id one at a time (a stop racing a start would kill the new run). */
  private async exclusive<T>(id: string, operation: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(id) ?? Promise.resolve()
    const run = previous.then(operation)
    const settled = run.catch(() => undefined)
    this.locks.set(id, settled)
    try {
      return await run
    } finally {
      if (this.locks.get(id) === settled) this.locks.delete(id)
    }
  }
}
