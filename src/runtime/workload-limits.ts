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
