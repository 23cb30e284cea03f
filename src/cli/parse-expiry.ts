import { UsageError } from './usage-error.js'

const units: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 }

/** `30d`, `12h`, `90m`, or an ISO date-time; returns an ISO string or throws with the reason. */
export function parseExpiry(value: string, now: Date): string {
  const relative = /^(\d+)([mhd])$/.exec(value.trim())
  if (relative)
    return new Date(now.getTime() + Number(relative[1]) * units[relative[2]!]!).toISOString()
  const absolute = new Date(value)
  if (Number.isNaN(absolute.getTime()) || !/^\d{4}-\d{2}-\d{2}/.test(value)) {
    throw new UsageError(
      `--expires: "${value}" is neither a duration like 30d, 12h, 90m nor an ISO date-time`,
    )
  }
  return absolute.toISOString()
}
