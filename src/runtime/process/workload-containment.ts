import { chmod, chown, lchown, readdir, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import type { EgressRules } from '../../shared/egress-cidrs.js'
import type { WorkloadIsolation, WorkloadSpec } from '../driver.js'
import type { DiskWriteRule } from '../workload-limits.js'
import { probeHostOnce, serverIdentity } from '../host-probes.js'
import { findExecutable, probeBubblewrap } from './bubblewrap.js'
import { probeCgroups, releaseWorkloadCgroup, type CgroupSetup } from './cgroup-files.js'
import { leaveGlobalNetworks } from './global-network.js'
import {
  namespaceName,
  probePodNetwork,
  releasePodNetwork,
  type PodNetwork,
} from './pod-network.js'
import { SandboxUsers } from './sandbox-users.js'
import {
  sandboxIdentityFiles,
  type BubblewrapSandbox,
  type SandboxIdentity,
} from './workload-launch.js'
import { GROUP_FILE, OUT_OF_MEMORY_FILE, PASSWD_FILE, workloadFile } from './workload-files.js'

export type SandboxMode = 'auto' | 'none' | 'bubblewrap'
/** isolated: each sandboxed workload in its own network namespace; host: the host's network. */
export type PodNetworkMode = 'isolated' | 'host'

/** Tenant -> uid of the sandbox, beside the state directory (which holds workloads only). */
const SANDBOX_USERS_FILE = 'sandbox-users.json'

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

/**
 * What this host can contain workloads with: the sandbox (bubblewrap), a network namespace
 * each (pasta) and a cgroup each, each decided once, on first use; and what one workload
 * takes of them, set up before its start and released at its end.
 */
export class WorkloadContainment {
  private sandboxChoice: Promise<BubblewrapSandbox | null> | undefined
  /** Why workloads run unsandboxed, once the choice says they do. */
  private unsandboxedReason = ''
  private networkChoice: Promise<PodNetwork | null> | undefined
  private cgroupChoice: Promise<CgroupSetup> | undefined
  /** Why sandboxed workloads share the host's network, once the choice says they do. */
  private sharedNetworkReason = ''
  private readonly sandboxUsers: SandboxUsers

  constructor(
    private readonly options: {
      stateDir: string
      sandboxMode: SandboxMode
      bwrapPath: string | undefined
      hostExecutables: readonly string[]
      sandboxUidBase: number
      networkMode: PodNetworkMode
      egress: EgressRules
      diskWriteRule: DiskWriteRule
    },
  ) {
    this.sandboxUsers = new SandboxUsers(
      path.join(path.dirname(options.stateDir), SANDBOX_USERS_FILE),
      options.sandboxUidBase,
    )
  }

  /**
   * Each workload's memory, CPU, processes and disk writes limited by a cgroup: decided once
   * (cgroup-files.ts).
   */
  cgroups(): Promise<CgroupSetup> {
    this.cgroupChoice ??= probeCgroups(this.options.stateDir, this.options.diskWriteRule)
    return this.cgroupChoice
  }

  sandbox(): Promise<BubblewrapSandbox | null> {
    if (this.sandboxChoice === undefined) {
      const { sandboxMode, sandboxUidBase, bwrapPath, hostExecutables } = this.options
      const choice = (async () => {
        if (sandboxMode === 'none') {
          this.unsandboxedReason = 'sandbox: none'
          return null
        }
        const options = {
          searchPath: process.env.PATH,
          probeUid: sandboxUidBase,
          executables: hostExecutables,
          ...(bwrapPath ? { bwrapPath } : {}),
        }
        const probe = await probeHostOnce(
          `bubblewrap ${serverIdentity()} ${JSON.stringify(options)}`,
          () => probeBubblewrap(options),
          (answer) => answer.ok,
        )
        if (probe.ok) return probe.sandbox
        if (sandboxMode === 'bubblewrap') {
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

  /** The network namespaces of sandboxed workloads, when they are wanted and work here. */
  network(): Promise<PodNetwork | null> {
    if (this.networkChoice === undefined) {
      this.networkChoice = (async () => {
        if (this.options.networkMode === 'host') return null
        const searchPath = process.env.PATH
        const probe = await probeHostOnce(
          `pod network ${serverIdentity()} ${searchPath}`,
          () => probePodNetwork(searchPath),
          (answer) => answer.ok,
        )
        if (probe.ok) return { ...probe.network, egress: this.options.egress }
        this.sharedNetworkReason = `network namespaces are not usable here: ${probe.reason}`
        return null
      })()
    }
    return this.networkChoice
  }

  /** The isolation level of the sandbox and network (the unenforced limits are the caller's). */
  async sandboxIsolation(): Promise<Omit<WorkloadIsolation, 'unenforced'>> {
    let sandbox: BubblewrapSandbox | null
    try {
      sandbox = await this.sandbox()
    } catch (error) {
      return { level: 'none', detail: (error as Error).message }
    }
    if (sandbox === null) return { level: 'none', detail: this.unsandboxedReason }
    const who =
      sandbox.setprivPath === null
        ? "bubblewrap, as the server's user in a user namespace"
        : 'bubblewrap, each tenant as its own unprivileged user'
    if ((await this.network()) !== null) {
      return { level: 'sandbox', detail: `${who}, each workload in its own network (pasta)` }
    }
    if (this.options.networkMode === 'host') {
      return { level: 'sandbox', detail: `${who}, in the host's network (podNetwork: host)` }
    }
    // The operator did not accept shared networks: as unisolated as no sandbox at all for
    // other accounts (the host's loopback services, other pods' ports).
    return {
      level: 'none',
      detail: `${who}, but in the host's network: ${this.sharedNetworkReason}`,
    }
  }

  /** A workload's network namespace (pasta leaves with it) and cgroup are gone with it. */
  async release(id: string): Promise<void> {
    const { stateDir } = this.options
    const ipPath = await findExecutable('ip', process.env.PATH)
    await leaveGlobalNetworks(ipPath, stateDir, id)
    await releasePodNetwork(namespaceName(stateDir, id), process.env.PATH)
    const oomMarker = workloadFile(stateDir, id, OUT_OF_MEMORY_FILE)
    await releaseWorkloadCgroup(await this.cgroups(), id, oomMarker)
  }

  /**
   * Who the workload is in its sandbox, with its passwd and group files written. Started by
   * root, it is its tenant's unprivileged user, and its writable directories are given to
   * that user (they are the only host files it can write). Otherwise it keeps the server's uid.
   * `exclusive` runs the hand-over of each directory one at a time.
   */
  async prepareSandbox(
    spec: WorkloadSpec,
    sandbox: BubblewrapSandbox,
    exclusive: (key: string, operation: () => Promise<void>) => Promise<void>,
  ): Promise<SandboxIdentity> {
    const privileged = sandbox.setprivPath !== null
    const uid = privileged ? await this.sandboxUsers.uidOf(spec.tenant) : process.getuid!()
    const gid = privileged ? uid : process.getgid!()
    const identity: SandboxIdentity = {
      uid,
      gid,
      passwdFile: workloadFile(this.options.stateDir, spec.id, PASSWD_FILE),
      groupFile: workloadFile(this.options.stateDir, spec.id, GROUP_FILE),
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
          await exclusive(`give:${mount.hostPath}`, () => giveTree(mount.hostPath, uid, gid))
      }
    }
    return identity
  }
}
