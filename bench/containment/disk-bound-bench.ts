/**
 * What bounding a workload's disk costs on this machine, per mechanism the process driver could
 * use (docs/runtime.md, "Disk bounds"): an ext4 image on a loop device (what it uses, through
 * its own code, src/runtime/disk-bounds/disk-bounds.ts), a tmpfs with size=, and a plain directory
 * (no bound, the reference). Project quotas are reported as available or not (they need the
 * data directory's file system mounted with prjquota). Needs root.
 *
 *   npx tsx bench/containment/disk-bound-bench.ts [--gb=10] [--write-mib=1024] [--rounds=5]
 *
 * For each: create time of a `--gb` bound (mean of `--rounds`), the host bytes it takes once
 * created (a sparse image must not pre-allocate), the write throughput of `--write-mib` MiB
 * (dd, fdatasync at the end), and the clean-up time.
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { DiskBounds } from '../../src/runtime/disk-bounds/disk-bounds.js'

function option(name: string, fallback: number): number {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`))
  return arg ? Number(arg.split('=')[1]) : fallback
}

const GB = option('gb', 10)
const WRITE_MIB = option('write-mib', 1024)
const ROUNDS = option('rounds', 5)

interface Mechanism {
  name: string
  create(dir: string): Promise<void>
  cleanup(dir: string): Promise<void>
  /** Host bytes taken by the bound itself once created. */
  hostBytes(dir: string): number
}

function duBytes(target: string): number {
  return Number(execFileSync('du', ['-sxB1', target], { encoding: 'utf8' }).split('\t')[0])
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) {
    console.log('disk bounds: not measured (needs root)')
    return
  }
  const root = mkdtempSync(path.join(process.cwd(), '.bench-disk-'))
  const bounds = new DiskBounds({ mode: 'auto', root, probeDir: root })
  const unenforced = await bounds.unenforced()
  const specOf = (dir: string) => ({ containerDiskPath: dir, diskGb: GB, mounts: [] })
  const mechanisms: Mechanism[] = [
    {
      name: 'ext4 image on a loop device',
      create: async (dir) => {
        if (!(await bounds.prepare({ ...specOf(dir) } as never))) {
          throw new Error(`not bounded here: ${unenforced[0]?.reason}`)
        }
      },
      cleanup: (dir) => bounds.release(specOf(dir)),
      hostBytes: (dir) => duBytes(`${dir}.ext4`),
    },
    {
      name: 'tmpfs size= (RAM)',
      create: async (dir) => {
        mkdirSync(dir, { recursive: true })
        execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${GB}g,mode=0700`, 'tmpfs', dir])
      },
      cleanup: async (dir) => {
        execFileSync('umount', [dir])
        rmSync(dir, { recursive: true, force: true })
      },
      hostBytes: () => 0,
    },
    {
      name: 'plain directory (no bound)',
      create: async (dir) => {
        mkdirSync(dir, { recursive: true })
      },
      cleanup: async (dir) => rmSync(dir, { recursive: true, force: true }),
      hostBytes: (dir) => duBytes(dir),
    },
  ]
  const fs = execFileSync('findmnt', ['-n', '-o', 'FSTYPE,OPTIONS', '-T', root], {
    encoding: 'utf8',
  }).trim()
  console.log(`data directory's file system: ${fs}`)
  console.log(
    `project quotas: ${/prjquota/.test(fs) ? 'available (prjquota)' : 'not available (mounted without prjquota)'}`,
  )
  const rows: string[][] = []
  try {
    for (const mechanism of mechanisms) {
      let createMs = 0
      let cleanupMs = 0
      let bytes = 0
      for (let round = 0; round < ROUNDS; round++) {
        const dir = path.join(root, `round-${round}`)
        const started = performance.now()
        await mechanism.create(dir)
        createMs += performance.now() - started
        bytes = Math.max(bytes, mechanism.hostBytes(dir))
        const cleaned = performance.now()
        await mechanism.cleanup(dir)
        cleanupMs += performance.now() - cleaned
      }
      const dir = path.join(root, 'write')
      await mechanism.create(dir)
      const written = performance.now()
      execFileSync('dd', [
        'if=/dev/zero',
        `of=${path.join(dir, 'fill')}`,
        'bs=1M',
        `count=${WRITE_MIB}`,
        'conv=fdatasync',
        'status=none',
      ])
      const mibPerS = WRITE_MIB / ((performance.now() - written) / 1000)
      await mechanism.cleanup(dir)
      rows.push([
        mechanism.name,
        `${(createMs / ROUNDS).toFixed(1)} ms`,
        `${(bytes / 1024 ** 2).toFixed(1)} MiB`,
        `${mibPerS.toFixed(0)} MiB/s`,
        `${(cleanupMs / ROUNDS).toFixed(1)} ms`,
      ])
    }
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
  const header = [
    'mechanism',
    `create ${GB} GB`,
    'host bytes after create',
    `write ${WRITE_MIB} MiB`,
    'clean-up',
  ]
  console.log(
    `load average: ${(await import('node:os'))
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  )
  for (const row of [header, ...rows]) console.log(row.map((c) => c.padEnd(28)).join(''))
}

await main()
