/**
 * What this machine lets workloads have (a bubblewrap sandbox, a network namespace, a bounded
 * disk) is found by trial: a sandbox run, a namespace made and connected, a disk image made and
 * mounted, about fifteen child processes and 100 ms in all. The answer depends on the machine,
 * the server's user and the inputs of the trial (the key), not on the platform asking, so a
 * process that starts several platforms (a test worker starts hundreds; `podyard serve` one)
 * makes each trial once. Only a success is kept: a failure is tried again by the next platform,
 * as what was missing may have been installed since.
 */
const successes = new Map<string, Promise<unknown>>()

export function probeHostOnce<T>(
  key: string,
  probe: () => Promise<T>,
  succeeded: (answer: T) => boolean,
): Promise<T> {
  const known = successes.get(key)
  if (known !== undefined) return known as Promise<T>
  const answer = probe()
  successes.set(key, answer)
  answer.then(
    (value) => {
      if (!succeeded(value) && successes.get(key) === answer) successes.delete(key)
    },
    () => {
      if (successes.get(key) === answer) successes.delete(key)
    },
  )
  return answer
}

/** The part of a probe's key every probe shares: who the server runs as. */
export function serverIdentity(): string {
  return `uid ${process.getuid?.() ?? 'none'}`
}
