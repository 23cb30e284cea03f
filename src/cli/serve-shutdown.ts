/** What is left running when `podyard serve` stops: the workloads it does not stop. */
export interface LeftRunning {
  pods: string[]
  /** Serverless workers, by endpoint id. */
  workers: Array<{ id: string; endpointId: string }>
}

/**
 * Workloads outlive the server by design (the next `serve` on the store adopts them,
 * docs/runtime.md): on shutdown `serve` says which are left and how to stop them.
 */
export function leftRunningMessage(left: LeftRunning): string | undefined {
  if (left.pods.length === 0 && left.workers.length === 0) return undefined
  const endpoints = [...new Set(left.workers.map((w) => w.endpointId))]
  const lines = [
    'podyard stopped. These keep running (workloads outlive the server; the next `podyard serve`',
    'on this store adopts them):',
  ]
  if (left.pods.length > 0) {
    lines.push(`  ${plural(left.pods.length, 'pod')}: ${left.pods.join(', ')}`)
  }
  if (left.workers.length > 0) {
    lines.push(
      `  ${plural(left.workers.length, 'serverless worker')} of ${plural(endpoints.length, 'endpoint')}: ${endpoints.join(', ')}`,
    )
  }
  lines.push('To stop them, with the server running:')
  if (left.pods.length > 0) lines.push('  podyard pods stop <pod-id>')
  if (left.workers.length > 0) {
    lines.push('  podyard endpoints update <endpoint-id> --workers-min 0 --workers-max 0')
  }
  return lines.join('\n')
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`
}
