/**
 * What the tenant is told when the kernel killed its workload for reaching its memory limit
 * (WorkloadState.outOfMemory): the pod's statusReason and system log, a worker's reason and the
 * error of the jobs it held (docs/pods.md, docs/serverless-workers.md).
 */
export function outOfMemoryReason(who: 'pod' | 'worker', memoryGb: number | undefined): string {
  if (memoryGb === undefined || !(memoryGb > 0))
    return `out of memory: the ${who} used all its memory`
  // Whole GB as they are rented; a fraction (a GPU's share) with at most two decimals.
  return `out of memory: the ${who} used its ${Number(memoryGb.toFixed(2))} GB`
}
