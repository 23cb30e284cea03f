import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

/**
 * A stand-in `nvidia-smi` executable for machines without a GPU: a shell script that answers
 * the platform's discovery (each GPU's index, UUID, name, memory and driver, or names alone, and the
 * banner's CUDA version), the remapped-rows query
 * (from remapped.csv), and the sampler's `--query-gpu=... -lms` loop by printing query.csv
 * every 200 ms, which a test rewrites to play a GPU's life. Each sampler process writes its pid
 * to sampler-pids. The lines it prints are fixtures written by hand in NVIDIA's documented
 * shapes (test/fixtures/nvidia-smi), never recordings of a real GPU.
 */
export interface FakeNvidiaSmi {
  dir: string
  /** PATH with the fake first. */
  path: string
  setQuery(lines: string): void
  setRemappedRows(lines: string): void
  samplerPids(): number[]
}

/**
 * `everyInterval`: the sampler's loop prints query.csv every `-lms` milliseconds, as nvidia-smi
 * does, instead of every 200 ms (the GPU sampling bench, which measures a second's round).
 */
export function fakeNvidiaSmi(
  gpuNames: readonly string[],
  options: { everyInterval?: boolean } = {},
): FakeNvidiaSmi {
  const dir = mkdtempSync(path.join(tmpdir(), 'podyard-fake-nvidia-smi-'))
  const names = gpuNames.map((n) => `${n}, 81559 MiB`).join('\\n')
  const details = gpuNames
    .map(
      (n, i) =>
        `${i}, GPU-00000000-0000-4000-8000-${String(i).padStart(12, '0')}, ${n}, 81559, 550.54.15`,
    )
    .join('\\n')
  const script = `#!/bin/sh
dir="$(dirname "$0")"
case "$*" in
  *--query-gpu=*-lms*)
    echo $$ >> "$dir/sampler-pids"
    ${
      options.everyInterval
        ? `pause=$(echo "$*" | sed -n 's/.*-lms \\([0-9]*\\).*/\\1/p' | awk '{ print $1 / 1000 }')`
        : 'pause=0.2'
    }
    while :; do cat "$dir/query.csv"; sleep "$pause"; done ;;
  *--query-remapped-rows=*) cat "$dir/remapped.csv" ;;
  *--query-gpu=index,uuid,name,memory.total,driver_version*) printf '${details}\\n' ;;
  *--query-gpu=name,memory.total*) printf '${names}\\n' ;;
  "") echo "| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |" ;;
  *) echo "fake nvidia-smi: unexpected arguments: $*" >&2; exit 2 ;;
esac
`
  writeFileSync(path.join(dir, 'nvidia-smi'), script)
  chmodSync(path.join(dir, 'nvidia-smi'), 0o755)
  writeFileSync(path.join(dir, 'query.csv'), '')
  writeFileSync(path.join(dir, 'remapped.csv'), '')
  return {
    dir,
    path: `${dir}${path.delimiter}${process.env.PATH ?? ''}`,
    setQuery: (lines) => writeFileSync(path.join(dir, 'query.csv'), lines),
    setRemappedRows: (lines) => writeFileSync(path.join(dir, 'remapped.csv'), lines),
    samplerPids: () => {
      try {
        return readFileSync(path.join(dir, 'sampler-pids'), 'utf8')
          .split('\n')
          .filter(Boolean)
          .map(Number)
      } catch {
        return []
      }
    },
  }
}
