const tones: Record<string, string> = {
  RUNNING: 'good',
  COMPLETED: 'good',
  IDLE: 'good',
  READY: 'good',
  UP: 'good',
  ACTIVE: 'good',
  PROVISIONING: 'busy',
  STARTING: 'busy',
  INITIALIZING: 'busy',
  IN_QUEUE: 'busy',
  IN_PROGRESS: 'busy',
  DRAINING: 'busy',
  DEGRADED: 'busy',
  PULLING: 'busy',
  PRESENT: 'good',
  EXITED: 'idle',
  CANCELLED: 'idle',
  TERMINATED: 'idle',
  CORDONED: 'idle',
  ERROR: 'bad',
  FAILED: 'bad',
  TIMED_OUT: 'bad',
  UNHEALTHY: 'bad',
  THROTTLED: 'bad',
  DOWN: 'bad',
}

/** A status word with a colour that only repeats it (the word itself carries the meaning). */
export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge badge-${tones[status] ?? 'idle'}`}>{status}</span>
}
