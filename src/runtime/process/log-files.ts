import path from 'node:path'

/**
 * The files of a workload's log, in its state directory, and how its budget is shared among
 * them (docs/runtime.md, "Logs"):
 *
 * - `output.log`: what the workload writes (stdout and stderr), read by the pump (log-pump.ts)
 *   and emptied once read, so it holds only output not yet numbered: at most a quarter of the
 *   budget at rest.
 * - `logs.jsonl` and `logs.1.jsonl`: the numbered log, the newest entries and those before
 *   them. When `logs.jsonl` would grow past three eighths of the budget it becomes
 *   `logs.1.jsonl` (the older one goes) and a new `logs.jsonl` begins
 *   (rotating-log-writer.ts): the newest lines are kept, the oldest go.
 * - `output.reset`: the seq of the last entry when `output.log` was last emptied, so that a
 *   restarted server knows the file starts over after that entry.
 */
export interface WorkloadLogFiles {
  output: string
  current: string
  rotated: string
  outputReset: string
}

export function workloadLogFiles(dir: string): WorkloadLogFiles {
  return {
    output: path.join(dir, 'output.log'),
    current: path.join(dir, 'logs.jsonl'),
    rotated: path.join(dir, 'logs.1.jsonl'),
    outputReset: path.join(dir, 'output.reset'),
  }
}

export interface LogBudget {
  /** The whole budget. */
  maxBytes: number
  /** Largest size of logs.jsonl (and so of logs.1.jsonl). */
  fileBytes: number
  /** Largest size of output.log the pump leaves in place; past it, it keeps the newest part. */
  outputBytes: number
}

export function logBudgetOf(maxBytes: number): LogBudget {
  return {
    maxBytes,
    fileBytes: Math.floor((maxBytes * 3) / 8),
    outputBytes: Math.floor(maxBytes / 4),
  }
}
