import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'

// Node.js reads and parses the bundle NODE_EXTRA_CA_CERTS names at every start, about 50 ms of
// CPU for a distribution's bundle (Debian's 144 certificates), and the suite starts hundreds of
// Node.js processes (podyard commands, servers, workers), which talk only to this machine and to
// servers with the tests' own certificates: they run without it (docs/development.md).
delete process.env.NODE_EXTRA_CA_CERTS

/**
 * Files run at once per core. The default suite's files spend most of their time waiting on
 * servers, child processes and outages, not computing: on two cores it took 509 s with 2 files
 * at once, 392 s with 3 and 339 s with 4, and once platforms started faster 252 s with 4 and
 * 228 s with 6 (docs/development.md, "Where the suite's time goes"). The opt-in suites (any
 * PODYARD_TEST_* set: Docker engines, PostgreSQL, the multi-host rig, a browser) add work outside
 * the test workers, in engines, databases and VMs, and keep two per core, as CI's runs of them
 * were measured. At most 8 files at once, so a big machine does not start dozens of platforms
 * together.
 */
function filesPerCore(): number {
  const optIn = Object.keys(process.env).some(
    (name) => name.startsWith('PODYARD_TEST_') && process.env[name] !== '',
  )
  return optIn ? 2 : 3
}

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'packages/*/src/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['test/support/build-dist.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    maxWorkers: Math.min(8, filesPerCore() * availableParallelism()),
    // Each worker runs its files in one process: the platform's modules load once per worker,
    // not once per file (docs/development.md, "Isolation").
    isolate: false,
  },
})
