import { setTimeout as sleep } from 'node:timers/promises'

/** How often a log follower of a pod or worker not yet launched looks again. */
export const LAUNCH_WAIT_POLL_MS = 100

/**
 * A pod or serverless worker that is not launched yet has no workload (nor, before placement, a
 * host) whose output could be followed: reads it again every 100 ms while `notLaunched` holds,
 * so that a follower who connects early sees the first line instead of a stream that ends at
 * once. Undefined when the follower went away or the pod or worker did.
 */
export async function untilLaunched<T>(
  current: T | undefined,
  readAgain: () => Promise<T | undefined>,
  notLaunched: (value: T) => boolean,
  signal: AbortSignal,
): Promise<T | undefined> {
  while (current !== undefined && notLaunched(current) && !signal.aborted) {
    await sleep(LAUNCH_WAIT_POLL_MS, undefined, { signal }).catch(() => undefined)
    current = await readAgain()
  }
  return signal.aborted ? undefined : current
}
