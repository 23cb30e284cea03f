import { isPlaceholder, normaliseBusId } from './nvidia-smi-query.js'

/** The fields of `nvidia-smi --query-remapped-rows=... --format=csv,noheader,nounits`. */
export const REMAPPED_ROWS_FIELDS = [
  'gpu_bus_id',
  'gpu_uuid',
  'remapped_rows.correctable',
  'remapped_rows.uncorrectable',
  'remapped_rows.pending',
  'remapped_rows.failure',
] as const

/** Row remapping of one GPU (Ampere and newer; older GPUs retire pages instead). */
export interface RemappedRows {
  busId: string
  uuid: string | null
  correctable: number | null
  uncorrectable: number | null
  /** A remap waits for a GPU reset; until then the GPU should take no new work. */
  pending: boolean | null
  /** A remap failed: the memory has run out of spare rows. */
  failure: boolean | null
}

function count(field: string | undefined): number | null {
  if (field === undefined || isPlaceholder(field)) return null
  const value = Number(field.trim())
  return Number.isSafeInteger(value) ? value : null
}

function flag(field: string | undefined): boolean | null {
  if (field === undefined || isPlaceholder(field)) return null
  const value = field.trim().toLowerCase()
  // Drivers print 0/1 (nounits) or No/Yes depending on version.
  if (value === '1' || value === 'yes') return true
  if (value === '0' || value === 'no') return false
  return null
}

/** Lines of `--query-remapped-rows`; GPUs without row remapping print placeholders (null). */
export function parseRemappedRows(csv: string): RemappedRows[] {
  const rows: RemappedRows[] = []
  for (const line of csv.split('\n')) {
    const fields = line.split(',').map((f) => f.trim())
    if (fields.length !== REMAPPED_ROWS_FIELDS.length || isPlaceholder(fields[0]!)) continue
    rows.push({
      busId: normaliseBusId(fields[0]!),
      uuid: isPlaceholder(fields[1]!) ? null : fields[1]!,
      correctable: count(fields[2]),
      uncorrectable: count(fields[3]),
      pending: flag(fields[4]),
      failure: flag(fields[5]),
    })
  }
  return rows
}

/** One XID event as the NVIDIA kernel driver logs it ("NVRM: Xid (PCI:0000:3b:00): 79, ..."). */
export interface XidEvent {
  busId: string
  xid: number
  /** The rest of the driver's line: pid, process name, and its description. */
  detail: string
}

const XID_LINE = /NVRM: Xid \(PCI:([0-9A-Fa-f:.]+)\):\s*(\d+),\s*(.*)$/

/**
 * XID events in kernel log text (`journalctl -k -o cat`, `dmesg`, /dev/kmsg records). nvidia-smi
 * has no query for XIDs; the driver writes them only to the kernel log (NVIDIA's "XID Errors"
 * document). Lines that are not XIDs are skipped.
 */
export function parseXidEvents(kernelLog: string): XidEvent[] {
  const events: XidEvent[] = []
  for (const line of kernelLog.split('\n')) {
    const match = XID_LINE.exec(line)
    if (!match) continue
    events.push({
      busId: normaliseBusId(match[1]!),
      xid: Number(match[2]),
      detail: match[3]!.trim(),
    })
  }
  return events
}
