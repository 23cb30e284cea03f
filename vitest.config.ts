import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'

// Node.js reads and parses the bundle NODE_EXTRA_CA_CERTS names at every start, about 50 ms of
// CPU for a distribution's bundle (Debian's 144 certificates), and the suite starts hundreds of
// Node.js processes (podyard commands, servers, workers), which talk only to this machine and to
// servers with the tests' own certificates: they run without it (docs/development.md).
delete process.env.NODE_EXTRA_CA_CERTS

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'packages/*/src/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['test/support/build-dist.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two files per core: integration files spend most of their time waiting on servers, child
    // processes and outages, not computing. The default suite on two cores took 509 s with 2
    // workers, 392 s with 3 and 339 s with 4 (docs/development.md, "Where the suite's time goes").
    // At most 8, so a big machine does not start dozens of platforms at once.
    maxWorkers: Math.min(8, 2 * availableParallelism()),
    // Each worker runs its files in one process: the platform's modules load once per worker,
    // not once per file (docs/development.md, "Isolation").
    isolate: false,
  },
})
