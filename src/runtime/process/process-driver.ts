import { spawn } from 'node:child_process'
import { closeSync, openSync } from 'node:fs'
import {
  chmod,
  chown,
  lchown,
  mkdir,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
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
} from '../driver.js'
import { DEFAULT_WORKLOAD_LOG_MAX_BYTES, hasLabels } from '../driver.js'
import { findExecutable, probeBubblewrap } from './bubblewrap.js'
import { joinGlobalNetwork, leaveGlobalNetworks } from './global-network.js'
import {
  openWorkloadCgroup,
  probeCgroups,
  ranOutOfMemory,
  releaseWorkloadCgroup,
  unenforcedWithout,
  type CgroupSetup,
} from './cgroup-files.js'
import { launchInCgroup } from './cgroup-plan.js'
import { DiskBounds, type DiskBoundMode } from './disk-bounds.js'
import { logBudgetOf, workloadLogFiles, type LogBudget } from './log-files.js'
import { LogFollower } from './log-follower.js'
import { logLineOf } from './log-lines.js'
import { LogPump } from './log-pump.js'
import { readLogTail } from './log-tail.js'
import {
  namespaceName,
  namespacePath,
  openPodNetwork,
  probePodNetwork,
  releasePodNetwork,
  type PodNetwork,
} from './pod-network.js'
import {
  CLOCK_TICKS_PER_SECOND,
  cpuPercent,
  cpuSample,
  memoryPercent,
  type CpuSample,
  type ProcStat,
} from './proc-stat.js'
import {
  currentBootId,
  followProcesses,
  groupLives,
  leaderIsRunning,
  leaderIsStranger,
  leaderRunsIn,
  membersIn,
  millisecondsSinceBoot,
  pidExists,
  ProcessTable,
  readProcStatSync,
  signalGroup,
  signalPid,
  systemPageSize,
  withDescendants,
  type GroupIdentity,
} from './process-group.js'
import { watchOutput } from './output-watch.js'
import { DEFAULT_SANDBOX_UID_BASE, SandboxUsers } from './sandbox-users.js'
import {
  buildLaunch,
  DEFAULT_IDLE_COMMAND,
  resolveCommand,
  sandboxIdentityFiles,
  type BubblewrapSandbox,
  type Launch,
  type SandboxIdentity,
} from './workload-launch.js'
import {
  isValidWorkloadId,
  parseExitStatus,
  parseWorkloadRecord,
  persistedSpecOf,
  type WorkloadRecord,
} from './workload-record.js'

export type SandboxMode = 'auto' | 'none' | 'bubblewrap'
/** isolated: each sandboxed workload in its own network namespace; host: the host's network. */
export type PodNetworkMode = 'isolated' | 'host'

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
}

export const DEFAULT_STOP_GRACE_MS = 10_000
export const DEFAULT_LOG_POLL_MS = 250

/**
 * Least time a stats() measurement covers: the first one covers the workload's life so far
 * (waiting until it is this old), later ones the time since the previous call.
 */
export const STATS_SAMPLE_MS = 200
/** A previous stats() sample older than this says little about now; measure afresh. */
const STATS_SAMPLE_MAX_AGE_MS = 60_000
/** A read of the process table this recent serves a stats() call (measurements share reads). */
const STATS_TABLE_MAX_AGE_MS = 1000
/**
 * A read of the process table this recent finds the members of a workload being stopped (stops
 * share reads); what the workload started since is found from its leader and those members.
 */
const STOP_TABLE_MAX_AGE_MS = 250
/** How often a stop looks whether the processes it follows are gone, at most. */
const STOP_POLL_MS = 25
/** How often a stop that lasts looks for group members it does not follow (waitForEnd). */
const STOP_RESCAN_MS = 1_000
/**
 * How often the workloads adopted from a previous server (not this process's children, whose
 * exit Node reports) are looked at: one kill(0) each.
 */
export const ADOPTED_POLL_MS = 1000
/**
 * After SIGKILL a process may still be leaving (a large address space to free, a read from a
 * dead NFS server in D state); past this bound stop() reports the survivors.
 */
const KILL_WAIT_MS = 10_000
/** Processes an exited workload left behind are stopped quickly before it is started again. */
const LEFTOVER_GRACE_MS = 1_000

const STATE_FILE = 'state.json'
const EXIT_STATUS_FILE = 'exit-status'
/** The sandbox's /etc/passwd and /etc/group, naming the workload's user. */
const PASSWD_FILE = 'passwd'
const GROUP_FILE = 'group'
/** Written when the kernel killed a process of the workload for its memory limit. */
const OUT_OF_MEMORY_FILE = 'out-of-memory'
/** Tenant -> uid of the sandbox, beside the state directory (which holds workloads only). */
const SANDBOX_USERS_FILE = 'sandbox-users.json'

interface Ended {
  exitCode: number | null
  finishedAt: string
  outOfMemory: boolean
}

/** What the driver holds in memory about one workload it started or adopted. */
interface Tracked {
  record: WorkloadRecord
  pump: LogPump
  /** Stops watching output.log for new output (watchOutput). */
  unwatch: (() => void) | undefined
  /** A pump of its output is running, and whether output came meanwhile. */
  pumping: boolean
  pumpAgain: boolean
  /** Its end was taken in (last output pumped, listeners told). */
  settled: boolean
  ended: Ended | undefined
  cpu: CpuSample | undefined
  removed: boolean
  /**
   * A stop is under way: its leader (the exit-status shell) may end at SIGTERM while what it ran
   * ignores it, and what is left is the stop's to kill after the grace period, not the cgroup's
   * release when the leader's end is seen.
   */
  stopping?: boolean
  /** Writes of state.json, one after the other, each of the record current when it runs. */
  saving: Promise<unknown>
}

function groupOf(record: WorkloadRecord): GroupIdentity {
  return { pgid: record.pgid, leaderStartTicks: record.processStartTicks }
}

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === 'ENOENT'
}

/**
 * Gives a directory the workload may write to its sandbox user. Its contents change hands
 * too when the directory itself is someone else's (files of a run before the sandbox, or of
 * the server): lchown, so that a link planted in it never hands over what it points to.
 */
async function giveTree(dir: string, uid: number, gid: number): Promise<void> {
  const info = await stat(dir)
  if (info.uid === uid && info.gid === gid) return
  const walk = async (at: string): Promise<void> => {
    for (const entry of await readdir(at, { withFileTypes: true })) {
      const child = path.join(at, entry.name)
      if (entry.isDirectory()) await walk(child)
      await lchown(child, uid, gid)
    }
  }
  await walk(dir)
  await chown(dir, uid, gid)
  await chmod(dir, 0o700)
}

function isInside(child: string, parent: string): boolean {
  const relative = path.relative(parent, child)
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative))
}

/**
 * Runs each workload as a detached process group on this host: no images, no resource limits,
 * optionally inside bubblewrap. Workloads outlive the server; a new driver on the same state
 * directory adopts them. See docs/runtime.md.
 */
export class ProcessDriver implements RuntimeDriver {
  readonly name = 'process'

  private readonly stateDir: string
  private readonly images: Readonly<Record<string, string>>
  private readonly idleCommand: string
  private readonly clock: Clock
  private readonly sandboxMode: SandboxMode
  private readonly logPollMs: number
  private readonly logBudget: LogBudget
  private readonly workloads = new Map<string, Tracked>()
  /** Running workloads this process did not start: their exit is looked for (ADOPTED_POLL_MS). */
  private readonly adopted = new Set<Tracked>()
  private livenessTimer: NodeJS.Timeout | undefined
  private readonly listeners = new Set<(id: string) => void>()
  private readonly processes = new ProcessTable()
  private readonly locks = new Map<string, Promise<unknown>>()
  private readonly closing = new AbortController()
  /** Whether this driver runs the workloads of its state directory (see setActive). */
  private active = true
  private sandboxChoice: Promise<BubblewrapSandbox | null> | undefined
  /** Why workloads run unsandboxed, once the choice says they do. */
  private unsandboxedReason = ''
  private readonly bwrapPath: string | undefined
  private readonly sandboxUidBase: number
  private readonly sandboxUsers: SandboxUsers
  private readonly networkMode: PodNetworkMode
  private readonly egress: EgressRules
  private networkChoice: Promise<PodNetwork | null> | undefined
  private cgroupChoice: Promise<CgroupSetup> | undefined
  /** Why sandboxed workloads share the host's network, once the choice says they do. */
  private sharedNetworkReason = ''
  private readonly disks: DiskBounds
  private diskSweep: Promise<unknown> | undefined

  constructor(options: ProcessDriverOptions) {
    this.stateDir = path.resolve(options.stateDir)
    this.images = { ...options.images }
    this.idleCommand = options.idleCommand ?? DEFAULT_IDLE_COMMAND
    this.clock = options.clock ?? systemClock
    this.sandboxMode = options.sandbox ?? 'auto'
    this.logPollMs = options.logPollMs ?? DEFAULT_LOG_POLL_MS
    this.logBudget = logBudgetOf(options.logMaxBytes ?? DEFAULT_WORKLOAD_LOG_MAX_BYTES)
    this.bwrapPath = options.bwrapPath
    this.sandboxUidBase = options.sandboxUidBase ?? DEFAULT_SANDBOX_UID_BASE
    this.networkMode = options.network ?? 'isolated'
    this.egress = options.egress ?? NO_EGRESS_RULES
    this.disks = new DiskBounds({
      mode: options.diskBound ?? 'none',
      root: options.diskImagesUnder ?? path.dirname(this.stateDir),
      probeDir: path.dirname(this.stateDir),
    })
    this.sandboxUsers = new SandboxUsers(
      path.join(path.dirname(this.stateDir), SANDBOX_USERS_FILE),
      this.sandboxUidBase,
    )
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
    this.active = active
    // Either way, what was known may be stale: start again from the files.
    this.forgetAll()
  }

  /**
   * Calls `listener` with a workload's id when it ended on its own (or was found ended): its
   * own child's exit at once, an adopted one's within ADOPTED_POLL_MS. Only while active.
   */
  watch(listener: (id: string) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  private forgetAll(): void {
    for (const tracked of this.workloads.values()) this.stopPumping(tracked)
    this.workloads.clear()
    this.adopted.clear()
    clearInterval(this.livenessTimer)
    this.livenessTimer = undefined
  }

  /** Reads of the whole process table so far (stats and stops share them). */
  get processTableReads(): number {
    return this.processes.reads
  }

  /** The sandbox new workloads get: decided once, on first use. */
  async activeSandbox(): Promise<'none' | 'bubblewrap'> {
    return (await this.chooseSandbox()) === null ? 'none' : 'bubblewrap'
  }

  async isolation(): Promise<WorkloadIsolation> {
    const cgroups = await this.chooseCgroups()
    await this.sweepDisks()
    return {
      ...(await this.sandboxIsolation()),
      unenforced: [
        ...(cgroups.ok ? [] : unenforcedWithout(cgroups.reason)),
        ...(await this.disks.unenforced()),
      ],
    }
  }

  /** Each workload's memory, CPU and processes limited by a cgroup: decided once (cgroup-files.ts). */
  private chooseCgroups(): Promise<CgroupSetup> {
    this.cgroupChoice ??= probeCgroups(this.stateDir)
    return this.cgroupChoice
  }

  /**
   * Once, before this driver mounts anything: unmounts the disk images that no workload of the
   * state directory claims (a server that crashed, or whose workloads were removed meanwhile).
   */
  private sweepDisks(): Promise<unknown> {
    if (!this.active) return Promise.resolve()
    this.diskSweep ??= (async () => {
      const names = await readdir(this.stateDir).catch(() => [] as string[])
      const specs = []
      for (const id of names.filter(isValidWorkloadId)) {
        const tracked = await this.load(id).catch(() => undefined)
        if (tracked) specs.push(tracked.record.spec)
      }
      await this.disks.sweep(DiskBounds.claimedBy(specs))
    })().catch(() => undefined)
    return this.diskSweep
  }

  private async sandboxIsolation(): Promise<Omit<WorkloadIsolation, 'unenforced'>> {
    let sandbox: BubblewrapSandbox | null
    try {
      sandbox = await this.chooseSandbox()
    } catch (error) {
      return { level: 'none', detail: (error as Error).message }
    }
    if (sandbox === null) return { level: 'none', detail: this.unsandboxedReason }
    const who =
      sandbox.setprivPath === null
        ? "bubblewrap, as the server's user in a user namespace"
        : 'bubblewrap, each tenant as its own unprivileged user'
    if ((await this.chooseNetwork()) !== null) {
      return { level: 'sandbox', detail: `${who}, each workload in its own network (pasta)` }
    }
    if (this.networkMode === 'host') {
      return { level: 'sandbox', detail: `${who}, in the host's network (podNetwork: host)` }
    }
    // The operator did not accept shared networks: as unisolated as no sandbox at all for
    // other accounts (the host's loopback services, other pods' ports).
    return {
      level: 'none',
      detail: `${who}, but in the host's network: ${this.sharedNetworkReason}`,
    }
  }

  /** The network namespaces of sandboxed workloads, when they are wanted and work here. */
  private chooseNetwork(): Promise<PodNetwork | null> {
    if (this.networkChoice === undefined) {
      this.networkChoice = (async () => {
        if (this.networkMode === 'host') return null
        const probe = await probePodNetwork(process.env.PATH)
        if (probe.ok) return { ...probe.network, egress: this.egress }
        this.sharedNetworkReason = `network namespaces are not usable here: ${probe.reason}`
        return null
      })()
    }
    return this.networkChoice
  }

  /** A workload's network namespace (pasta leaves with it) and cgroup are gone with it. */
  private async releaseNetwork(id: string): Promise<void> {
    const ipPath = await findExecutable('ip', process.env.PATH)
    await leaveGlobalNetworks(ipPath, this.stateDir, id)
    await releasePodNetwork(namespaceName(this.stateDir, id), process.env.PATH)
    const oomMarker = this.file(id, OUT_OF_MEMORY_FILE)
    await releaseWorkloadCgroup(await this.chooseCgroups(), id, oomMarker)
  }

  async start(spec: WorkloadSpec): Promise<WorkloadState> {
    this.checkSpec(spec)
    return this.exclusive(spec.id, () => this.startNow(spec))
  }

  stop(id: string, options: { graceMs?: number } = {}): Promise<void> {
    return this.exclusive(id, async () => {
      const tracked = await this.load(id)
      if (tracked) await this.stopNow(tracked, options.graceMs ?? DEFAULT_STOP_GRACE_MS)
    })
  }

  async inspect(id: string): Promise<WorkloadState | undefined> {
    const tracked = await this.load(id)
    return tracked && this.stateOf(tracked)
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
        const tracked = await this.load(id)
        return tracked && hasLabels(tracked.record.spec.labels, filter)
          ? this.stateOf(tracked)
          : undefined
      }),
    )
    return states
      .filter((s): s is WorkloadState => s !== undefined)
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  }

  /**
   * Reads the process table (shared with the other stats() and stops running at the time),
   * so measuring many workloads at once costs a few reads of /proc, not one each.
   */
  async stats(id: string): Promise<WorkloadStats | undefined> {
    const tracked = await this.load(id)
    // Ended (known, or its leader's pid is free): no need to look further.
    if (!tracked || tracked.settled || tracked.record.bootId !== currentBootId()) return undefined
    if (!pidExists(tracked.record.pid)) return undefined
    const group = groupOf(tracked.record)
    const asked = performance.now()
    // Not in a read up to a second old: the read may be older than the workload; a fresh one.
    if (
      !leaderRunsIn(await this.processes.read(asked - STATS_TABLE_MAX_AGE_MS), group) &&
      !leaderRunsIn(await this.processes.read(asked), group)
    ) {
      return undefined
    }
    let previous = tracked.cpu
    const startTicks = tracked.record.processStartTicks
    if (previous === undefined && startTicks !== null) {
      // The first measurement: its use since its leader started (at least STATS_SAMPLE_MS of it).
      const aliveMs = millisecondsSinceBoot() - startTicks * (1000 / CLOCK_TICKS_PER_SECOND)
      previous = { atMs: performance.now() - Math.max(0, aliveMs), ticks: new Map() }
    }
    if (previous === undefined || performance.now() - previous.atMs > STATS_SAMPLE_MAX_AGE_MS) {
      const table = await this.processes.read(asked - STATS_TABLE_MAX_AGE_MS)
      previous = cpuSample(table.startedAt, membersIn(table, group))
    }
    const wait = STATS_SAMPLE_MS - (performance.now() - previous.atMs)
    if (wait > 0) await sleep(wait)
    const table = await this.processes.read(
      Math.max(previous.atMs + STATS_SAMPLE_MS, asked - STATS_TABLE_MAX_AGE_MS),
    )
    const members = membersIn(table, group)
    const next = cpuSample(table.startedAt, members)
    tracked.cpu = next
    const rssBytes = members.reduce((sum, m) => sum + m.rssPages, 0) * (await systemPageSize())
    return {
      cpuPercent: cpuPercent(previous, next, tracked.record.spec.vcpus),
      memoryPercent: memoryPercent(rssBytes, tracked.record.spec.memoryGb),
    }
  }

  async readLogs(id: string, query: LogQuery = {}): Promise<LogLine[]> {
    const tracked = await this.load(id)
    if (!tracked) return []
    if (this.active) await tracked.pump.pump(!(await this.isRunning(tracked.record)))
    // From the end backwards: a tail costs what it returns, not the size of the log.
    return (await readLogTail(workloadLogFiles(this.dir(id)), query)).map(logLineOf)
  }

  async *followLogs(id: string, afterSeq: number, signal: AbortSignal): AsyncIterable<LogLine> {
    const stopped = AbortSignal.any([signal, this.closing.signal])
    // Reads from where it was, a chunk at a time, never the whole log.
    const follower = new LogFollower(workloadLogFiles(this.dir(id)), afterSeq)
    while (!stopped.aborted) {
      const tracked = await this.load(id)
      if (!tracked) return
      // Read the phase before pumping: a workload seen exited has written everything, so
      // this pass delivers its last lines and following can end.
      const running = await this.isRunning(tracked.record)
      if (this.active) await tracked.pump.pump(!running)
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
      const tracked = await this.load(id)
      if (tracked) {
        // Its log and state go with it: how it ended is not written down first.
        await this.stopNow(tracked, DEFAULT_STOP_GRACE_MS, false)
        tracked.removed = true
        this.workloads.delete(id)
        this.adopted.delete(tracked)
        await this.disks.release(tracked.record.spec)
        await rm(tracked.record.spec.containerDiskPath, {
          recursive: true,
          force: true,
          maxRetries: 3,
        })
      }
      if (isValidWorkloadId(id)) {
        await rm(this.dir(id), { recursive: true, force: true, maxRetries: 3 })
      }
    })
  }

  /** Ends timers and followers; the driver still answers (reading logs on demand). */
  async close(): Promise<void> {
    this.closing.abort()
    this.forgetAll()
  }

  // --- starting ---------------------------------------------------------------------------

  private checkSpec(spec: WorkloadSpec): void {
    if (!isValidWorkloadId(spec.id))
      throw new Error(`invalid workload id ${JSON.stringify(spec.id)}`)
    const disk = spec.containerDiskPath
    // The disk is emptied on every start: a path that holds the state directory, or the root,
    // would be wiped with it.
    if (!path.isAbsolute(disk) || path.resolve(disk) === '/' || isInside(this.stateDir, disk)) {
      throw new Error(`workload ${spec.id}: unusable container disk path ${JSON.stringify(disk)}`)
    }
    for (const mount of spec.mounts) {
      if (!path.isAbsolute(mount.hostPath) || !path.isAbsolute(mount.containerPath)) {
        throw new Error(`workload ${spec.id}: mount paths must be absolute`)
      }
      // Volumes outlive the container disk; one inside it would be wiped with it.
      if (isInside(mount.hostPath, disk)) {
        throw new Error(`workload ${spec.id}: mount ${mount.hostPath} is inside the container disk`)
      }
    }
  }

  private async startNow(spec: WorkloadSpec): Promise<WorkloadState> {
    const existing = await this.load(spec.id)
    if (existing) {
      if (await this.isRunning(existing.record)) {
        throw new AppError('INVALID_STATE', `workload ${spec.id} is already running`)
      }
      await this.stopNow(existing, LEFTOVER_GRACE_MS)
    }
    const sandbox = await this.chooseSandbox()
    await this.sweepDisks()
    // Bounded: a new empty image is mounted there; else the directory is emptied.
    if (!(await this.disks.prepare(spec))) await this.emptyDirectory(spec.containerDiskPath)
    for (const mount of spec.mounts) await mkdir(mount.hostPath, { recursive: true })
    await mkdir(this.dir(spec.id), { recursive: true })
    const exitStatusFile = this.file(spec.id, EXIT_STATUS_FILE)
    await rm(exitStatusFile, { force: true })
    await rm(this.file(spec.id, OUT_OF_MEMORY_FILE), { force: true })
    const identity = sandbox && (await this.prepareSandbox(spec, sandbox))
    const network = sandbox && (await this.chooseNetwork())
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

    const cgroups = await this.chooseCgroups()
    const cgroup = cgroups.ok ? await openWorkloadCgroup(cgroups, spec) : null
    const { command } = resolveCommand(spec, this.images, this.idleCommand)
    const built = buildLaunch(spec, {
      command,
      exitStatusFile,
      sandbox: sandbox && identity ? { sandbox, identity } : null,
      netns:
        network && netns ? { nsenterPath: network.nsenterPath, path: namespacePath(netns) } : null,
      ...(global ? { hostsFile: global.hostsFile } : {}),
      hostPath: process.env.PATH,
    })
    const launch = cgroup ? launchInCgroup(built, cgroup.procsFiles) : built
    const { pid, startTicks } = await this.spawnDetached(spec.id, launch).catch(
      async (error: unknown) => {
        if (netns || cgroup) await this.releaseNetwork(spec.id)
        await this.disks.unmountAll(spec).catch(() => undefined)
        throw error
      },
    )
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
    const tracked = existing ?? this.track(record)
    tracked.record = record
    tracked.ended = undefined
    tracked.settled = false
    tracked.cpu = undefined
    this.adopted.delete(tracked)
    this.workloads.set(spec.id, tracked)
    try {
      await this.save(tracked)
    } catch (error) {
      // Unrecorded, nobody could ever find and stop it.
      signalGroup(groupOf(record), [], 'SIGKILL')
      this.workloads.delete(spec.id)
      throw error
    }
    this.startPumping(tracked)
    return this.stateOf(tracked)
  }

  /**
   * Who the workload is in its sandbox, with its passwd and group files written. Started by
   * root, it is its tenant's unprivileged user, and its writable directories are given to
   * that user (they are the only host files it can write). Otherwise it keeps the server's uid.
   */
  private async prepareSandbox(
    spec: WorkloadSpec,
    sandbox: BubblewrapSandbox,
  ): Promise<SandboxIdentity> {
    const privileged = sandbox.setprivPath !== null
    const uid = privileged ? await this.sandboxUsers.uidOf(spec.tenant) : process.getuid!()
    const gid = privileged ? uid : process.getgid!()
    const identity: SandboxIdentity = {
      uid,
      gid,
      passwdFile: this.file(spec.id, PASSWD_FILE),
      groupFile: this.file(spec.id, GROUP_FILE),
    }
    const files = sandboxIdentityFiles(uid, gid)
    await writeFile(identity.passwdFile, files.passwd)
    await writeFile(identity.groupFile, files.group)
    if (privileged) {
      // The container disk was just emptied: only the directory itself changes hands.
      await chown(spec.containerDiskPath, uid, gid)
      await chmod(spec.containerDiskPath, 0o700)
      for (const mount of spec.mounts) {
        // One at a time per directory: a workload started on it must not be able to swap
        // a directory for a link while another start still walks it.
        if (!mount.readOnly)
          await this.exclusive(`give:${mount.hostPath}`, () => giveTree(mount.hostPath, uid, gid))
      }
    }
    return identity
  }

  /** Empties a directory (creating it when missing) without removing the directory itself. */
  private async emptyDirectory(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true })
    const names = await readdir(dir)
    await Promise.all(
      names.map((name) =>
        rm(path.join(dir, name), { recursive: true, force: true, maxRetries: 3 }),
      ),
    )
  }

  private async spawnDetached(
    id: string,
    launch: Launch,
  ): Promise<{ pid: number; startTicks: number | null }> {
    // output.log is opened here and handed to the child as its stdout and stderr: the
    // workload writes to the file itself, so its output does not depend on this process
    // staying alive (a pipe would break, and the workload die of SIGPIPE, with the server).
    // Append mode keeps the output of earlier runs, which logs.jsonl offsets refer to.
    const fd = openSync(workloadLogFiles(this.dir(id)).output, 'a')
    let child
    try {
      child = spawn(launch.file, launch.args, {
        cwd: launch.cwd,
        env: launch.env,
        // A new session and process group, so that the whole workload can be signalled as
        // one (kill(-pgid)) and the server's own signals (Ctrl-C on its group) spare it.
        detached: true,
        stdio: ['ignore', fd, fd],
      })
    } finally {
      closeSync(fd)
    }
    const pid = child.pid
    if (pid === undefined) {
      const error = await new Promise<Error>((resolve) => child.once('error', resolve))
      throw new Error(`workload ${id}: could not start: ${error.message}`, { cause: error })
    }
    // Read before this function yields to the event loop: until then Node cannot have reaped
    // the child, so /proc/<pid> is there even for a command that exits at once.
    const startTicks = readProcStatSync(pid)?.starttime ?? null
    child.on('error', () => undefined)
    child.once('exit', () => this.childExited(id, pid))
    child.unref()
    return { pid, startTicks }
  }

  /** Our own child ended: note the time, collect its last output and say so. */
  private childExited(id: string, pid: number): void {
    if (this.closing.signal.aborted) return
    const tracked = this.workloads.get(id)
    if (!tracked || tracked.removed || tracked.record.pid !== pid) return
    if (tracked.record.stoppedAt === undefined) {
      tracked.record = { ...tracked.record, stoppedAt: this.clock.now().toISOString() }
      this.save(tracked).catch(() => undefined)
    }
    void this.ended(tracked)
  }

  /** The workload ended by itself: its last output, how it ended, and the listeners told. */
  private async ended(tracked: Tracked): Promise<void> {
    if (tracked.settled || tracked.removed) return
    try {
      await this.settle(tracked)
    } catch {
      // Its last lines are read again by readLogs(); the end is known either way.
    }
    if (this.active && !tracked.stopping) {
      await this.releaseNetwork(tracked.record.spec.id).catch(() => undefined)
    }
    if (tracked.removed || !this.active) return
    for (const listener of this.listeners) listener(tracked.record.spec.id)
  }

  /** One kill(0) per adopted workload: those whose leader is gone have ended. */
  private checkAdopted(): void {
    for (const tracked of this.adopted) {
      if (pidExists(tracked.record.pid)) continue
      this.adopted.delete(tracked)
      void this.ended(tracked)
    }
    if (this.adopted.size === 0) {
      clearInterval(this.livenessTimer)
      this.livenessTimer = undefined
    }
  }

  private adopt(tracked: Tracked): void {
    this.adopted.add(tracked)
    if (this.livenessTimer || this.closing.signal.aborted) return
    this.livenessTimer = setInterval(() => this.checkAdopted(), ADOPTED_POLL_MS)
    this.livenessTimer.unref()
  }

  private chooseSandbox(): Promise<BubblewrapSandbox | null> {
    if (this.sandboxChoice === undefined) {
      const choice = (async () => {
        if (this.sandboxMode === 'none') {
          this.unsandboxedReason = 'sandbox: none'
          return null
        }
        const probe = await probeBubblewrap({
          searchPath: process.env.PATH,
          probeUid: this.sandboxUidBase,
          ...(this.bwrapPath ? { bwrapPath: this.bwrapPath } : {}),
        })
        if (probe.ok) return probe.sandbox
        if (this.sandboxMode === 'bubblewrap') {
          throw new Error(`sandbox 'bubblewrap' is not usable: ${probe.reason}`)
        }
        this.unsandboxedReason = `bubblewrap is not usable here: ${probe.reason}`
        return null
      })()
      this.sandboxChoice = choice
      // A failed explicit choice is retried next time (bwrap may be installed meanwhile).
      choice.catch(() => {
        if (this.sandboxChoice === choice) this.sandboxChoice = undefined
      })
    }
    return this.sandboxChoice
  }

  // --- stopping ---------------------------------------------------------------------------

  /**
   * SIGTERM to the group (and to session members that left it), SIGKILL after `graceMs`. The
   * processes to stop are found in a read of /proc shared with the stops (and measurements)
   * running at the same moment, with the leader and every descendant of those added just before
   * the signal (the read may be older than the workload's newest processes); the wait then
   * follows only them and their children (a read of each one's /proc entry), and a process
   * found meanwhile gets the signal too: one started by a process that ignores it (the init of a
   * sandbox's PID namespace) would never hear it otherwise. Stopping many workloads thus costs
   * each its own processes, not a read of every process on the machine. Zombies count as ended:
   * an init that reaps orphans late (some containers') does not hold a stop up.
   */
  private async stopNow(tracked: Tracked, graceMs: number, settle = true): Promise<void> {
    tracked.stopping = true
    try {
      await this.stopGroup(tracked, graceMs)
    } finally {
      tracked.stopping = false
    }
    this.adopted.delete(tracked)
    await this.releaseNetwork(tracked.record.spec.id)
    if (settle) await this.settle(tracked)
    else {
      tracked.settled = true
      this.stopPumping(tracked)
    }
  }

  /** SIGTERM to the workload's processes, SIGKILL to what is left after `graceMs`. */
  private async stopGroup(tracked: Tracked, graceMs: number): Promise<void> {
    const { record } = tracked
    const group = groupOf(record)
    if (record.bootId === currentBootId() && groupLives(group.pgid)) {
      const read = await this.liveMembers(group)
      if (read !== undefined) {
        const roots = new Map(read.map((m) => [m.pid, m.starttime]))
        if (group.leaderStartTicks !== null) roots.set(group.pgid, group.leaderStartTicks)
        const members = withDescendants(roots)
        signalGroup(group, members, 'SIGTERM')
        const known = new Map(members.map((m) => [m.pid, m.starttime]))
        const rescan = () => this.liveMembers(group)
        if (!(await this.waitForEnd(known, graceMs, 'SIGTERM', new Set(known.keys()), rescan))) {
          const left = (await this.liveMembers(group)) ?? []
          signalGroup(group, left, 'SIGKILL')
          for (const member of left) known.set(member.pid, member.starttime)
          if (!(await this.waitForEnd(known, KILL_WAIT_MS, 'SIGKILL'))) {
            const pids = [...known.keys()].join(', ')
            throw new Error(`workload ${record.spec.id}: processes ${pids} survived SIGKILL`)
          }
        }
      }
    }
  }

  /**
   * The group's members and session members that left it, from a shared read of the process
   * table; undefined when the group ended and its leader's pid is another process's now.
   */
  private async liveMembers(group: GroupIdentity): Promise<ProcStat[] | undefined> {
    if (await leaderIsStranger(group)) return undefined
    return membersIn(await this.processes.read(performance.now() - STOP_TABLE_MAX_AGE_MS), group)
  }

  /**
   * Until the `known` processes (and the children they had) are gone or zombies (true), or `ms`
   * pass (false). Each one gets `signal` once, unless in `signalled` already (a process found
   * meanwhile too: one started by a process that ignores the signal would never hear it
   * otherwise); without `signalled`, every one still there gets it again at each look. With
   * `rescan`, a wait that lasts adds the group's members every STOP_RESCAN_MS: a process whose
   * parent ended before the wait saw it (the sandbox's PID-namespace init, orphaned when bwrap's
   * outer process died of the signal as it started) is in no known process's children, and its
   * command would otherwise run on, unsignalled, through the whole grace.
   */
  private async waitForEnd(
    known: Map<number, number>,
    ms: number,
    signal: NodeJS.Signals,
    signalled?: Set<number>,
    rescan?: () => Promise<ProcStat[] | undefined>,
  ): Promise<boolean> {
    const deadline = performance.now() + ms
    let rescanAt = performance.now() + STOP_RESCAN_MS
    for (let pause = 2; ; pause = Math.min(STOP_POLL_MS, pause * 2)) {
      if (rescan && performance.now() >= rescanAt) {
        for (const member of (await rescan()) ?? []) {
          if (!known.has(member.pid)) known.set(member.pid, member.starttime)
        }
        rescanAt = performance.now() + STOP_RESCAN_MS
      }
      if (followProcesses(known) === 0) return true
      for (const pid of known.keys()) {
        if (signalled?.has(pid)) continue
        signalPid(pid, signal)
        signalled?.add(pid)
      }
      if (performance.now() >= deadline) return false
      await sleep(pause)
    }
  }

  /** The workload is over: stop watching its output, take the last of it, note how it ended. */
  private async settle(tracked: Tracked): Promise<void> {
    tracked.settled = true
    this.stopPumping(tracked)
    await tracked.pump.pump(true)
    await this.noteEnded(tracked)
  }

  // --- observing --------------------------------------------------------------------------

  private async isRunning(record: WorkloadRecord): Promise<boolean> {
    return record.bootId === currentBootId() && leaderIsRunning(groupOf(record))
  }

  /**
   * Whether a workload this driver tracks runs. One it watches (its own child, whose exit Node
   * reports; one adopted, looked at every second) was identified by its start ticks when it
   * was started or adopted, and runs until its end is seen: a kill(0) is enough, not a read of
   * its /proc entry.
   */
  private async trackedRuns(tracked: Tracked): Promise<boolean> {
    if (tracked.settled) return false
    if (this.active && this.workloads.get(tracked.record.spec.id) === tracked) {
      return tracked.record.bootId === currentBootId() && pidExists(tracked.record.pid)
    }
    return this.isRunning(tracked.record)
  }

  private async stateOf(tracked: Tracked): Promise<WorkloadState> {
    const { record } = tracked
    const base = { id: record.spec.id, startedAt: record.startedAt, labels: record.spec.labels }
    if (await this.trackedRuns(tracked)) {
      return { ...base, phase: 'running', exitCode: null, finishedAt: null }
    }
    const ended = await this.noteEnded(tracked)
    return {
      ...base,
      phase: 'exited',
      exitCode: ended.exitCode,
      finishedAt: ended.finishedAt,
      ...(ended.outOfMemory ? { outOfMemory: true } : {}),
    }
  }

  /** How an ended workload ended; computed once and kept. Call only once it has ended. */
  private async noteEnded(tracked: Tracked): Promise<Ended> {
    if (tracked.ended) return tracked.ended
    const exitFile = this.file(tracked.record.spec.id, EXIT_STATUS_FILE)
    const exitCode = parseExitStatus(await readFile(exitFile, 'utf8').catch(() => undefined))
    let finishedAt = tracked.record.stoppedAt
    if (finishedAt === undefined) {
      // Ended while no driver watched: the exit-status file was written as it ended.
      const written = await stat(exitFile).catch(() => undefined)
      finishedAt = (written?.mtime ?? this.clock.now()).toISOString()
      tracked.record = { ...tracked.record, stoppedAt: finishedAt }
      if (this.active) await this.save(tracked).catch(() => undefined)
    }
    const id = tracked.record.spec.id
    const outOfMemory = await ranOutOfMemory(
      await this.chooseCgroups(),
      id,
      this.file(id, OUT_OF_MEMORY_FILE),
    )
    tracked.ended = { exitCode, finishedAt, outOfMemory }
    return tracked.ended
  }

  /** The tracked workload for an id, adopting it from the state directory when unseen. */
  private async load(id: string): Promise<Tracked | undefined> {
    const known = this.workloads.get(id)
    if (known) return known
    if (!isValidWorkloadId(id)) return undefined
    let text: string
    try {
      text = await readFile(this.file(id, STATE_FILE), 'utf8')
    } catch (error) {
      if (isMissing(error)) return undefined
      throw error
    }
    const record = parseWorkloadRecord(text)
    if (!record || record.spec.id !== id) return undefined
    // Inactive: read afresh each time, never kept, never pumped (setActive).
    if (!this.active) return this.track(record)
    const raced = this.workloads.get(id)
    if (raced) return raced
    const tracked = this.track(record)
    this.workloads.set(id, tracked)
    // Written by a version that kept the environment (worker keys) in it: write it again
    // without.
    if (/"(env|registryAuth)"\s*:/.test(text)) await this.save(tracked).catch(() => undefined)
    // Adopted: running, its exit is looked for and its output pumped as it comes; ended while
    // no driver was running, its last lines are collected now.
    if (await this.isRunning(record)) {
      this.adopt(tracked)
      this.startPumping(tracked)
    } else void this.ended(tracked)
    return tracked
  }

  // --- log pumping ------------------------------------------------------------------------

  /**
   * Copies output into the log as it is written: output.log is watched (inotify), and a change
   * pumps within logPollMs. A workload that writes nothing costs nothing.
   */
  private startPumping(tracked: Tracked): void {
    if (tracked.unwatch !== undefined || this.closing.signal.aborted) return
    const output = workloadLogFiles(this.dir(tracked.record.spec.id)).output
    tracked.unwatch = watchOutput(output, this.logPollMs, () => this.pumpSoon(tracked))
    // What it wrote before the watch began.
    this.pumpSoon(tracked)
  }

  private stopPumping(tracked: Tracked): void {
    tracked.unwatch?.()
    tracked.unwatch = undefined
  }

  private pumpSoon(tracked: Tracked): void {
    if (tracked.removed || tracked.settled) return
    if (tracked.pumping) {
      // Written while a pump read: read again once it is done.
      tracked.pumpAgain = true
      return
    }
    tracked.pumping = true
    tracked.pump
      .pump(false)
      .catch(() => {
        // A failed read or append is retried at the next change; readLogs() reports it.
      })
      .finally(() => {
        tracked.pumping = false
        if (tracked.pumpAgain) {
          tracked.pumpAgain = false
          this.pumpSoon(tracked)
        }
      })
  }

  // --- files ------------------------------------------------------------------------------

  private dir(id: string): string {
    return path.join(this.stateDir, id)
  }

  private file(id: string, name: string): string {
    return path.join(this.stateDir, id, name)
  }

  private track(record: WorkloadRecord): Tracked {
    const id = record.spec.id
    return {
      record,
      pump: new LogPump(workloadLogFiles(this.dir(id)), this.clock, this.logBudget),
      unwatch: undefined,
      pumping: false,
      pumpAgain: false,
      settled: false,
      ended: undefined,
      cpu: undefined,
      removed: false,
      saving: Promise.resolve(),
    }
  }

  /** Persists the tracked record; serialised so that an older record never lands last. */
  private save(tracked: Tracked): Promise<void> {
    const run = tracked.saving.then(async () => {
      if (tracked.removed) return
      // Written aside and renamed, so a crash never leaves half a state.json.
      const target = this.file(tracked.record.spec.id, STATE_FILE)
      await writeFile(`${target}.tmp`, `${JSON.stringify(tracked.record, null, 2)}\n`)
      await rename(`${target}.tmp`, target)
    })
    tracked.saving = run.catch(() => undefined)
    return run
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
