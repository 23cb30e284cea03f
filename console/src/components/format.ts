/** USD with enough digits for per-second prices ($0.000315) and whole cents for big sums. */
export function usd(amount: number | null | undefined): string {
  if (amount === null || amount === undefined) return '—'
  const abs = Math.abs(amount)
  const digits = abs === 0 ? 2 : abs < 0.01 ? 6 : abs < 1 ? 4 : 2
  return `${amount < 0 ? '-' : ''}$${abs.toFixed(digits)}`
}

export const perHour = (amount: number | null | undefined) => `${usd(amount)}/h`

export function when(iso: string | null | undefined): string {
  if (!iso) return '—'
  const date = new Date(iso)
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString()
}

export function duration(seconds: number | undefined): string {
  if (seconds === undefined) return '—'
  const h = Math.floor(seconds / 3600)
  const m = Math.floor((seconds % 3600) / 60)
  const s = Math.floor(seconds % 60)
  return h > 0 ? `${h}h ${m}m` : m > 0 ? `${m}m ${s}s` : `${s}s`
}

/** `8888/http, 22/tcp` -> ["8888/http", "22/tcp"]. */
export const portsOf = (text: string) =>
  text
    .split(/[\s,]+/)
    .map((port) => port.trim())
    .filter((port) => port !== '')

/** What a pod or worker runs on: `2 × NVIDIA A40`, or `2 vCPU (cpu3c)`. */
export function computeOf(resources: {
  gpu?: { count: number; id: string } | null
  cpu?: { vcpuCount: number; id: string } | null
}): string {
  if (resources.gpu) return `${resources.gpu.count} × ${resources.gpu.id}`
  if (resources.cpu) return cpuOf(resources.cpu)
  return '—'
}

export const cpuOf = (cpu: { vcpuCount: number; id: string }) => `${cpu.vcpuCount} vCPU (${cpu.id})`
