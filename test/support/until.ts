/**
 * Probes until `done` holds of what `probe` returns, every 100 ms, and resolves with that value;
 * after `timeoutMs` throws, naming `what` and the last value seen.
 */
export async function until<T>(
  what: string,
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (done(value)) return value
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** Probes until `look` finds something (not undefined), every 100 ms, and resolves with it. */
export async function untilFound<T>(
  what: string,
  look: () => Promise<T | undefined>,
  timeoutMs = 60_000,
): Promise<T> {
  return (await until(what, look, (value) => value !== undefined, timeoutMs)) as T
}
