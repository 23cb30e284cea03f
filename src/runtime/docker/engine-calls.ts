import { setTimeout as sleep } from 'node:timers/promises'
import type Docker from 'dockerode'
import { workloadStateOf, type ContainerInspection } from './container-spec.js'

/** Small helpers around the engine's answers, shared by the driver's parts. */

export function statusOf(error: unknown): number | undefined {
  const status = (error as { statusCode?: unknown } | null)?.statusCode
  return typeof status === 'number' ? status : undefined
}

/** 404 (no such container/image) and 409 (not running, already being removed) are outcomes. */
export async function ignoring<T>(
  statuses: number[],
  action: () => Promise<T>,
): Promise<T | undefined> {
  try {
    return await action()
  } catch (error) {
    if (statuses.includes(statusOf(error) ?? 0)) return undefined
    throw error
  }
}

/** The engine's words for a published port another process holds (docker-proxy or iptables). */
export function publishedPortTaken(error: unknown): boolean {
  return /port is already allocated|address already in use/i.test((error as Error)?.message ?? '')
}

/** Whether the container exited (or is gone) within `timeoutMs`. */
export async function waitExited(container: Docker.Container, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const inspection = await ignoring([404], () => container.inspect())
    if (!inspection) return true
    if (workloadStateOf(inspection as ContainerInspection).phase === 'exited') return true
    if (Date.now() >= deadline) return false
    await sleep(Math.min(25, Math.max(1, deadline - Date.now())))
  }
}
