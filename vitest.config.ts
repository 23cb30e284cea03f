import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'packages/*/src/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['test/support/build-dist.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration suites start servers and databases; two cores do not gain from more forks.
    maxWorkers: 2,
    // Each worker runs its files in one process: the platform's modules load once per worker,
    // not once per file (docs/development.md, "Isolation").
    isolate: false,
  },
})
