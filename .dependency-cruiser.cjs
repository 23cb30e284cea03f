/**
 * The allowed imports of docs/architecture.md ("Layers and the direction of imports").
 * Each layer lists what it must NOT reach; `shared` is open to everyone.
 */
const layer = (name) => `^src/${name}/`
const layers = [
  'shared',
  'config',
  'domain',
  'store',
  'queue',
  'scheduler',
  'runtime',
  'control',
  'api',
  'sdk',
  'models',
  'cli',
  'client',
]
const allowed = {
  shared: [],
  config: ['shared'],
  domain: ['shared'],
  store: ['domain', 'shared'],
  queue: ['domain', 'shared'],
  scheduler: ['domain', 'shared'],
  runtime: ['shared'],
  control: ['domain', 'queue', 'scheduler', 'runtime', 'shared'],
  api: ['domain', 'queue', 'shared'],
  sdk: ['shared'],
  models: ['sdk', 'shared'],
  cli: ['client', 'config', 'shared'],
  client: ['shared'],
}

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Import cycles make layers meaningless and initialisation order fragile.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'only-main-imports-platform',
      severity: 'error',
      comment:
        'platform.ts composes the server, store-root.ts the store commands; only the CLI entry (main.ts) loads them.',
      from: { path: '^src/', pathNot: '^src/main\\.ts$' },
      to: { path: '^src/(platform|store-root)\\.ts$' },
    },
    {
      name: 'only-platform-imports-wiring',
      severity: 'error',
      comment:
        'src/wiring/ is the composition split by area (docs/architecture.md); only platform.ts puts it together, and store-root.ts its store part.',
      from: { path: '^src/', pathNot: '^src/(platform\\.ts$|store-root\\.ts$|wiring/)' },
      to: { path: '^src/wiring/' },
    },
    {
      name: 'store-root-without-the-server',
      severity: 'error',
      comment:
        'store-root.ts serves the store commands (migrate, keys, accounts, store): it wires the store and its services, not the server, so those commands do not load it.',
      from: { path: '^src/store-root\\.ts$' },
      to: { path: '^src/wiring/', pathNot: '^src/wiring/store-(wiring|commands)\\.ts$' },
    },
    {
      name: 'wiring-below-platform',
      severity: 'error',
      comment:
        'The areas are wired for platform.ts; none of them reaches back to it, to store-root.ts or to main.ts.',
      from: { path: '^src/wiring/' },
      to: { path: '^src/(platform|store-root|main)\\.ts$' },
    },
    {
      name: 'nothing-imports-main',
      severity: 'error',
      comment: 'main.ts is the composition root; nothing in src depends on it.',
      from: { path: '^src/' },
      to: { path: '^src/main\\.ts$' },
    },
    {
      name: 'sdk-without-dependencies',
      severity: 'error',
      comment:
        "The worker SDK (@podyard/worker, packages/worker; podyard/worker re-exports it) runs inside users' workers, and src/models/ inside the platform's model workers: Node built-ins only, so they load none of the server's packages and the SDK package has no dependency.",
      from: { path: '^(src/(sdk|models)|packages/worker/src)/' },
      to: {
        dependencyTypes: [
          'npm',
          'npm-dev',
          'npm-optional',
          'npm-peer',
          'npm-no-pkg',
          'npm-unknown',
        ],
      },
    },
    {
      name: 'console-public-api-only',
      severity: 'error',
      comment:
        'The web console talks to the server only through its public HTTP API (DESIGN.md): nothing of src/ is bundled into it.',
      from: { path: '^console/src/' },
      to: { path: '^src/' },
    },
    {
      name: 'sdk-package-self-contained',
      severity: 'error',
      comment:
        'packages/worker is published on its own (@podyard/worker): it imports nothing of the platform.',
      from: { path: '^packages/worker/src/' },
      to: { dependencyTypesNot: ['core'], pathNot: '^packages/worker/src/' },
    },
    {
      name: 'drivers-behind-their-contract',
      severity: 'error',
      comment:
        'Only runtime/ and wiring/ name a concrete driver (docker/, process/); everything else talks to runtime/driver.ts and host-runtime.ts, so a driver can be added or changed without touching the loops (docs/architecture.md).',
      from: { path: '^src/', pathNot: '^src/(runtime|wiring)/' },
      to: { path: '^src/runtime/(docker|process)/' },
    },
    {
      name: 'control-through-runtime-contracts',
      severity: 'error',
      comment:
        "The control loops reach workloads and hosts through the driver contract (runtime/driver.ts), the host runtime (runtime/host-runtime.ts) and the GPU readings (runtime/gpu/); the rest of runtime/ is the drivers' own (docs/architecture.md).",
      from: { path: '^src/control/' },
      to: {
        path: '^src/runtime/',
        pathNot: '^src/runtime/(driver\\.ts|host-runtime\\.ts|gpu/)',
      },
    },
    {
      name: 'database-packages-behind-the-store',
      severity: 'error',
      comment:
        "Kysely, better-sqlite3 and pg are the store's: only store/ and queue/ write SQL or name a dialect; everyone else goes through their repositories and ports (docs/architecture.md).",
      from: { path: '^src/', pathNot: '^src/(store|queue)/' },
      to: { path: '(^|/)node_modules/(kysely|better-sqlite3|pg|pg-[^/]+)/' },
    },
    {
      name: 'store-internals-behind-the-store',
      severity: 'error',
      comment:
        "The table types, the direct SQLite path, raw SQL and the migrations are the store's internals, shared with the queue only (docs/architecture.md).",
      from: { path: '^src/', pathNot: '^src/(store|queue)/' },
      to: {
        path: '^src/(store/(database-schema|direct-sqlite|raw-sql|pod-statements)\\.ts|store/migrations/|queue/job-tables\\.ts)',
      },
    },
    ...layers.map((name) => ({
      name: `layer-${name}`,
      severity: 'error',
      comment: `${name} may import only: ${[name, ...allowed[name]].join(', ')} (docs/architecture.md)`,
      from: { path: layer(name) },
      to: {
        path: `^src/(${layers.filter((other) => other !== name && !allowed[name].includes(other)).join('|')})/`,
        // The queue runs on the store's table types and direct SQLite path (store-internals-behind-the-store).
        ...(name === 'queue'
          ? { pathNot: '^src/store/(database-schema|direct-sqlite)\\.ts$' }
          : {}),
      },
    })),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.test\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
}
