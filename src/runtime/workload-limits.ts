/**
 * The processes (and threads: the pids cgroup counts both) a workload may have per vCPU it
 * rented, on either driver. Half the kernel's own default per CPU (pid_max is 1024 per CPU on
 * hosts of more than 32 CPUs, 32768 below): a host whose every vCPU is rented keeps at least
 * half its process table for itself and its engine, and a fork bomb stops at its own pod. A
 * data loader with a thread pool per worker process uses tens per vCPU, far below it.
 */
export const PIDS_PER_VCPU = 512

/** The pids limit of a workload of `vcpus` vCPUs: PIDS_PER_VCPU per vCPU begun. */
export function pidsLimitOf(vcpus: number): number {
  return Math.max(1, Math.ceil(vcpus)) * PIDS_PER_VCPU
}

/**
 * The disk writes a workload may make per vCPU it rented (`containment.diskWrite`): a rate of
 * bytes and of write operations per second on the disk that holds its container disk. Disk
 * bandwidth is not in the catalog; the vCPU count is what a bigger pod rents of the machine,
 * so its share of the disk grows with it, as the process bound does.
 */
export interface DiskWriteRule {
  /** MiB per second per vCPU; 0: no bandwidth limit. */
  mibPerSecondPerVcpu: number
  /** Write operations per second per vCPU; 0: no operations limit. */
  iopsPerVcpu: number
}

/**
 * 64 MiB/s and 500 writes/s per vCPU: on the NVMe-backed disk this was measured on (about
 * 1 GB/s and 8,000 direct 4 KiB writes/s from one writer), a 2-vCPU pod takes at most an
 * eighth of its bandwidth and its operations, and the platform's database keeps the rest.
 */
export const DEFAULT_DISK_WRITE_RULE: DiskWriteRule = { mibPerSecondPerVcpu: 64, iopsPerVcpu: 500 }

/** A workload's disk write limits; 0 in either: not limited by that one. */
export interface DiskWriteLimits {
  bytesPerSecond: number
  iops: number
}

/** The limits of a workload of `vcpus` vCPUs (a vCPU begun counts whole, as for processes). */
export function diskWriteLimitsOf(vcpus: number, rule: DiskWriteRule): DiskWriteLimits {
  const share = Math.max(1, Math.ceil(vcpus))
  return {
    bytesPerSecond: Math.round(rule.mibPerSecondPerVcpu * 1024 * 1024 * share),
    iops: Math.round(rule.iopsPerVcpu * share),
  }
}

/** Whether the rule limits anything (the operator may set both to 0: writes unlimited). */
export function diskWriteRuleLimits(rule: DiskWriteRule): boolean {
  return rule.mibPerSecondPerVcpu > 0 || rule.iopsPerVcpu > 0
}
