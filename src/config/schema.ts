import { Type, type Static } from '@sinclair/typebox'
import { CONTAINED_LIMITS } from '../shared/contained-limits.js'

const positiveInt = (description: string, defaultValue: number) =>
  Type.Integer({ minimum: 1, default: defaultValue, description })

/** A replacement of one operation's base limits (src/domain/serverless/operation-limits.ts). */
const OperationLimitOverride = Type.Optional(
  Type.Object(
    {
      rate: Type.Optional(Type.Integer({ minimum: 1, description: 'requests per 10 s window' })),
      concurrency: Type.Optional(Type.Integer({ minimum: 1, description: 'requests in flight' })),
    },
    { additionalProperties: false },
  ),
)

/** The whole configuration. Every key has a default so `podyard serve` needs no file. */
export const ConfigSchema = Type.Object(
  {
    host: Type.String({ minLength: 1, default: '127.0.0.1', description: 'listen address' }),
    port: Type.Integer({ minimum: 0, maximum: 65535, default: 8080, description: 'listen port' }),
    dataDir: Type.String({
      minLength: 1,
      default: './.podyard',
      description: 'directory for the SQLite file, volumes and keys',
    }),
    storeUrl: Type.String({
      default: '',
      description: 'sqlite:<file> or postgres://...; empty means sqlite:<dataDir>/podyard.db',
    }),
    fleet: Type.String({
      minLength: 1,
      default: 'demo',
      description: 'demo, none, or the path of a fleet file (YAML or JSON)',
    }),
    rateLimit: Type.Object(
      {
        minute: positiveInt('REST requests per account per minute', 600),
        hour: positiveInt('REST requests per account per hour', 20000),
        day: positiveInt('REST requests per account per day', 200000),
      },
      { additionalProperties: false, default: {} },
    ),
    webhooks: Type.Object(
      {
        retryDelayMs: positiveInt(
          'ms from a failed webhook attempt to the next (the spec says 10 s)',
          10000,
        ),
        timeoutMs: positiveInt('ms one webhook attempt waits for the receiver to answer', 10000),
        allowInternal: Type.Array(Type.String({ minLength: 1 }), {
          default: [],
          description:
            "internal webhook receivers the egress policy lets through: IP addresses, CIDR blocks (10.0.0.0/8, fd00::/8), host names, or *.domain (docs/security.md); this server's own listener stays refused",
        }),
      },
      { additionalProperties: false, default: {} },
    ),
    jobLimits: Type.Object(
      {
        perWorkerRate: positiveInt(
          'job API requests per 10 s each running worker adds to an operation of its endpoint',
          10,
        ),
        perWorkerConcurrency: positiveInt(
          'job API requests in flight each running worker adds to an operation of its endpoint',
          2,
        ),
        operations: Type.Object(
          {
            runsync: OperationLimitOverride,
            run: OperationLimitOverride,
            status: OperationLimitOverride,
            stream: OperationLimitOverride,
            cancel: OperationLimitOverride,
            'purge-queue': OperationLimitOverride,
            openai: OperationLimitOverride,
            requests: OperationLimitOverride,
            health: OperationLimitOverride,
          },
          {
            additionalProperties: false,
            default: {},
            description: 'replacements of the base limits of the specification, per operation',
          },
        ),
      },
      { additionalProperties: false, default: {} },
    ),
    workers: Type.Object(
      {
        intervalMs: positiveInt('ms between two reconciles of the worker autoscaler', 1000),
        pingIntervalMs: positiveInt('RUNPOD_PING_INTERVAL given to managed workers, ms', 10000),
        heartbeatTimeoutMs: positiveInt(
          'ms without a call from a ready worker before it is UNHEALTHY and replaced',
          30000,
        ),
        startTimeoutMs: positiveInt(
          'ms a started worker has to ask for its first job before it is UNHEALTHY',
          120000,
        ),
        stopGraceMs: positiveInt('ms from SIGTERM to SIGKILL when a worker is stopped', 10000),
        unhealthyRetentionMs: positiveInt(
          'ms an UNHEALTHY worker stays in the workers list after it was removed',
          60000,
        ),
        jobLeaseMs: Type.Integer({
          minimum: 5000,
          default: 60000,
          description:
            "ms a worker's take holds a job before it must heart-beat; a worker silent for longer loses the job to the queue (docs/serverless-queue.md)",
        }),
        jobApiUrl: Type.String({
          default: '',
          description:
            'the job API base URL given to managed workers, e.g. a load balancer in front of several replicas; empty means the URL this server listens on',
        }),
        startBackoffMs: positiveInt(
          'ms no worker of an endpoint starts after one failed; doubles per failure',
          1000,
        ),
        startBackoffMaxMs: positiveInt('the longest crash-loop backoff of an endpoint, ms', 60000),
      },
      { additionalProperties: false, default: {} },
    ),
    cluster: Type.Object(
      {
        leaseTtlMs: positiveInt(
          'PostgreSQL with several replicas: ms the leader lease lasts; a dead leader is replaced within about this (docs/production.md)',
          15000,
        ),
        syncIntervalMs: positiveInt(
          'PostgreSQL with several replicas: ms between two syncs of the job API counters, worker presence and the hosts added at runtime',
          1000,
        ),
      },
      { additionalProperties: false, default: {} },
    ),
    models: Type.Object(
      {
        file: Type.Optional(
          Type.String({
            minLength: 1,
            description:
              'YAML or JSON file mapping model ids to definitions, applied after the defaults (docs/public-endpoints.md)',
          }),
        ),
        definitions: Type.Record(Type.String(), Type.Record(Type.String(), Type.Unknown()), {
          default: {},
          description:
            'public models to add or override, by id, applied after the file: kind, name, description, price {unit, usd}, server {url, model?, apiKey?}, image, args, env, cpu, workers, timeoutMs, enabled',
        }),
      },
      { additionalProperties: false, default: {} },
    ),
    objects: Type.Object(
      {
        kind: Type.Union([Type.Literal('local'), Type.Literal('s3')], {
          default: 'local',
          description:
            'where public model results (images) are kept: local (<dataDir>/objects) or s3 (docs/public-endpoints.md, "Storage")',
        }),
        endpoint: Type.Optional(
          Type.String({
            minLength: 1,
            description:
              's3: the service URL, e.g. https://s3.eu-west-3.amazonaws.com or http://minio:9000',
          }),
        ),
        region: Type.String({
          minLength: 1,
          default: 'us-east-1',
          description: 's3: the region requests are signed for',
        }),
        bucket: Type.Optional(Type.String({ minLength: 3, description: 's3: the bucket' })),
        accessKeyId: Type.Optional(Type.String({ minLength: 1, description: 's3: access key id' })),
        secretAccessKey: Type.Optional(
          Type.String({ minLength: 1, description: 's3: secret access key (never logged)' }),
        ),
        prefix: Type.String({
          default: '',
          description: "s3: prepended to every key, e.g. 'podyard/'",
        }),
        forcePathStyle: Type.Boolean({
          default: false,
          description:
            's3: <endpoint>/<bucket>/<key> instead of <bucket>.<endpoint host>/<key> (MinIO and most self-hosted stores)',
        }),
      },
      { additionalProperties: false, default: {} },
    ),
    billing: Type.Object(
      {
        meterIntervalMs: positiveInt(
          'ms between two runs of the billing meter (charges are exact whatever the interval)',
          10000,
        ),
        enforce: Type.Boolean({
          default: false,
          description:
            'stop pods and refuse jobs of accounts at or below zero balance, and creates above the spend limit',
        }),
      },
      { additionalProperties: false, default: {} },
    ),
    adminKey: Type.Optional(
      Type.String({ minLength: 16, description: 'API key ensured for the admin account' }),
    ),
    encryptionKey: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'base64 of 32 bytes; encrypts registry passwords (default: <dataDir>/encryption.key, generated on first start)',
      }),
    ),
    adminEmail: Type.String({
      minLength: 3,
      default: 'admin@podyard.local',
      description: 'email of the admin user created on first start',
    }),
    publicIp: Type.String({
      minLength: 1,
      default: '127.0.0.1',
      description: 'address at which pods’ public ports are reachable (RUNPOD_PUBLIC_IP)',
    }),
    images: Type.Record(Type.String({ minLength: 1 }), Type.String({ minLength: 1 }), {
      default: {},
      description: 'process driver: the command to run for a pod of an image that has no args',
    }),
    sandbox: Type.Union([Type.Literal('auto'), Type.Literal('none'), Type.Literal('bubblewrap')], {
      default: 'auto',
      description:
        "process driver: run pods and workers inside bubblewrap. auto: when it works here, else only the admin account's run, unsandboxed; none: every account's run unsandboxed (docs/security.md)",
    }),
    podNetwork: Type.Union([Type.Literal('isolated'), Type.Literal('host')], {
      default: 'isolated',
      description:
        "process driver: isolated: each sandboxed pod and worker in its own network namespace (pasta), reachable only through its declared ports; where that cannot be had, only the admin account's run. host: the host's network, loopback services included, for every account (docs/security.md)",
    }),
    bwrapPath: Type.String({
      default: '',
      description: 'process driver: the bubblewrap executable; empty: bwrap on PATH',
    }),
    driver: Type.Union([Type.Literal('process'), Type.Literal('docker')], {
      default: 'process',
      description:
        'runtime driver of the local host: process or docker (declared hosts name theirs in the fleet file)',
    }),
    docker: Type.Object(
      {
        socketPath: Type.String({
          default: '',
          description: 'Docker Engine socket; empty: DOCKER_HOST, else /var/run/docker.sock',
        }),
        diskLimit: Type.Boolean({
          default: false,
          description:
            "deprecated and ignored: a container's disk is limited wherever the engine's storage driver enforces sizes, found out by a trial (docs/runtime.md)",
        }),
      },
      { additionalProperties: false, default: {} },
    ),
    gpus: Type.Object(
      {
        probeImage: Type.String({
          minLength: 1,
          maxLength: 255,
          // A Docker image reference: [registry[:port]/]name[:tag][@digest], lower case name.
          pattern:
            '^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$',
          default: 'ubuntu:24.04',
          description:
            "the image of the short-lived container that lists a Docker host's GPUs with the NVIDIA runtime; any image with a C library and a shell (docs/gpus.md)",
        }),
        kernelLog: Type.String({
          default: '/dev/kmsg',
          description:
            "where the local host's GPU sampler reads the NVIDIA driver's XID reports: /dev/kmsg (needs root), a FIFO or a file it follows from its end; empty: not read (docs/gpus.md)",
        }),
      },
      { additionalProperties: false, default: {} },
    ),
    workloadLogs: Type.Object(
      {
        maxMb: Type.Integer({
          minimum: 1,
          maximum: 1024 * 1024,
          default: 50,
          description:
            "MiB each pod's and worker's log may take on disk; past it the oldest lines go (process driver: its output and numbered log files; docker driver: json-file, two files of half each; docs/runtime.md)",
        }),
      },
      { additionalProperties: false, default: {} },
    ),
    containment: Type.Object(
      {
        acceptUnenforced: Type.Array(
          Type.Union(CONTAINED_LIMITS.map((limit) => Type.Literal(limit))),
          {
            default: [],
            uniqueItems: true,
            description:
              'limits (memory, cpu, pids, disk, diskWrite, volume) a host may leave unenforced while other accounts\' pods and workers still run there: the operator accepts the risk. A host that does not enforce another limit runs only the admin account\'s workloads (for volume: only those that mount a network volume; docs/security.md, "Containment")',
          },
        ),
        egress: Type.Optional(
          Type.Object(
            {
              allow: Type.Array(Type.String(), {
                default: [],
                description:
                  'CIDRs (or addresses) workloads may reach: when given, outbound traffic of pods and workers goes only there (process driver: routes in each pod\'s network namespace; docker driver: the host firewall). Default empty: outbound allowed (docs/security.md, "Egress of workloads")',
              }),
              deny: Type.Array(Type.String(), {
                default: [],
                description:
                  "CIDRs (or addresses) no workload reaches, on top of the metadata range (169.254.0.0/16) and the platform's own addresses, which are always denied",
              }),
            },
            { additionalProperties: false, default: {} },
          ),
        ),
        diskWrite: Type.Optional(
          Type.Object(
            {
              mibPerSecondPerVcpu: Type.Integer({
                minimum: 0,
                maximum: 1024 * 1024,
                default: 64,
                description:
                  'MiB per second each pod and worker may write to the disk of its container disk, per vCPU it rented (docker driver: BlkioDeviceWriteBps on the disk of the engine\'s data root; process driver: its cgroup\'s io.max or blkio throttle on the disk of the data directory). 0: no bandwidth limit (docs/security.md, "Disk writes")',
              }),
              iopsPerVcpu: Type.Integer({
                minimum: 0,
                maximum: 10_000_000,
                default: 500,
                description:
                  'write operations per second each pod and worker may make on that disk, per vCPU it rented. 0: no operations limit; both 0: diskWrite is reported unenforced',
              }),
            },
            { additionalProperties: false, default: {} },
          ),
        ),
        processDisk: Type.Optional(
          Type.Union([Type.Literal('auto'), Type.Literal('none')], {
            default: 'auto',
            description:
              "process driver: auto: each pod's and worker's container disk and each pod's volume is an ext4 image of its rented size on a loop device, so writing past it fails with ENOSPC (needs root and loop devices; else disk is reported unenforced); none: plain directories, disk and volume unenforced (docs/runtime.md, \"Disk bounds\")",
          }),
        ),
      },
      { additionalProperties: false, default: {} },
    ),
    hosts: Type.Object(
      {
        probeIntervalMs: positiveInt('ms between two probes of every host (docs/fleet.md)', 5000),
        probeTimeoutMs: positiveInt(
          'ms a probe of a host may take before it counts as failed',
          10000,
        ),
        failuresBeforeDown: positiveInt('failed probes in a row that make a host DOWN', 2),
      },
      { additionalProperties: false, default: {} },
    ),
    logLevel: Type.Union(
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
      { default: 'info', description: 'pino log level' },
    ),
    logFormat: Type.Union(
      ['auto', 'json', 'pretty'].map((f) => Type.Literal(f)),
      {
        default: 'auto',
        description:
          'json (one object a line), pretty (colored lines for people), or auto: pretty when stdout is a terminal, json otherwise',
      },
    ),
    metrics: Type.Object(
      {
        listen: Type.String({
          default: '',
          description:
            "host:port of a second listener that serves only /metrics, without a key, for a Prometheus on a private network (e.g. 127.0.0.1:9464, [::1]:9464); empty: none (the API's /metrics takes the admin's key either way)",
        }),
      },
      { additionalProperties: false, default: {} },
    ),
    telemetry: Type.Object(
      {
        traceContext: Type.Boolean({
          default: false,
          description:
            "W3C traceparent: continue the caller's trace, answer this request's span, log traceId and spanId",
        }),
        otlpEndpoint: Type.Optional(
          Type.String({
            default: '',
            description:
              'base URL of an OTLP/HTTP collector (e.g. http://127.0.0.1:4318; spans go to its /v1/traces): exports spans of requests, jobs and pods; empty: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT when set, else no tracing',
          }),
        ),
        endpointLabels: Type.Integer({
          minimum: 0,
          maximum: 1000,
          default: 20,
          description:
            "how many endpoints get their id as the job and queue metrics' endpoint label (the first active; the rest are other)",
        }),
      },
      { additionalProperties: false, default: {} },
    ),
  },
  { additionalProperties: false },
)

export type Config = Static<typeof ConfigSchema>

/** `list`: in the environment, entries separated by commas. */
export type Leaf = 'string' | 'integer' | 'boolean' | 'list'

/** Where each key may come from besides the file: its environment variable and its flag. */
export const configKeys: ReadonlyArray<{ path: string; env: string; flag?: string; type: Leaf }> = [
  { path: 'host', env: 'PODYARD_HOST', flag: 'host', type: 'string' },
  { path: 'port', env: 'PODYARD_PORT', flag: 'port', type: 'integer' },
  { path: 'dataDir', env: 'PODYARD_DATA_DIR', flag: 'dataDir', type: 'string' },
  { path: 'storeUrl', env: 'PODYARD_STORE_URL', flag: 'storeUrl', type: 'string' },
  { path: 'fleet', env: 'PODYARD_FLEET', flag: 'fleet', type: 'string' },
  { path: 'rateLimit.minute', env: 'PODYARD_RATELIMIT_MINUTE', type: 'integer' },
  { path: 'rateLimit.hour', env: 'PODYARD_RATELIMIT_HOUR', type: 'integer' },
  { path: 'rateLimit.day', env: 'PODYARD_RATELIMIT_DAY', type: 'integer' },
  { path: 'workers.intervalMs', env: 'PODYARD_WORKERS_INTERVAL_MS', type: 'integer' },
  { path: 'workers.pingIntervalMs', env: 'PODYARD_WORKERS_PING_INTERVAL_MS', type: 'integer' },
  {
    path: 'workers.heartbeatTimeoutMs',
    env: 'PODYARD_WORKERS_HEARTBEAT_TIMEOUT_MS',
    type: 'integer',
  },
  { path: 'workers.startTimeoutMs', env: 'PODYARD_WORKERS_START_TIMEOUT_MS', type: 'integer' },
  { path: 'workers.stopGraceMs', env: 'PODYARD_WORKERS_STOP_GRACE_MS', type: 'integer' },
  {
    path: 'workers.unhealthyRetentionMs',
    env: 'PODYARD_WORKERS_UNHEALTHY_RETENTION_MS',
    type: 'integer',
  },
  { path: 'workers.jobLeaseMs', env: 'PODYARD_WORKERS_JOB_LEASE_MS', type: 'integer' },
  { path: 'workers.jobApiUrl', env: 'PODYARD_WORKERS_JOB_API_URL', type: 'string' },
  { path: 'workers.startBackoffMs', env: 'PODYARD_WORKERS_START_BACKOFF_MS', type: 'integer' },
  {
    path: 'workers.startBackoffMaxMs',
    env: 'PODYARD_WORKERS_START_BACKOFF_MAX_MS',
    type: 'integer',
  },
  { path: 'webhooks.retryDelayMs', env: 'PODYARD_WEBHOOK_RETRY_DELAY_MS', type: 'integer' },
  { path: 'webhooks.timeoutMs', env: 'PODYARD_WEBHOOK_TIMEOUT_MS', type: 'integer' },
  { path: 'webhooks.allowInternal', env: 'PODYARD_WEBHOOK_ALLOW_INTERNAL', type: 'list' },
  { path: 'cluster.leaseTtlMs', env: 'PODYARD_CLUSTER_LEASE_TTL_MS', type: 'integer' },
  { path: 'cluster.syncIntervalMs', env: 'PODYARD_CLUSTER_SYNC_INTERVAL_MS', type: 'integer' },
  { path: 'jobLimits.perWorkerRate', env: 'PODYARD_JOB_LIMIT_PER_WORKER_RATE', type: 'integer' },
  {
    path: 'jobLimits.perWorkerConcurrency',
    env: 'PODYARD_JOB_LIMIT_PER_WORKER_CONCURRENCY',
    type: 'integer',
  },
  { path: 'models.file', env: 'PODYARD_MODELS_FILE', type: 'string' },
  { path: 'objects.kind', env: 'PODYARD_OBJECTS_KIND', type: 'string' },
  { path: 'objects.endpoint', env: 'PODYARD_OBJECTS_ENDPOINT', type: 'string' },
  { path: 'objects.region', env: 'PODYARD_OBJECTS_REGION', type: 'string' },
  { path: 'objects.bucket', env: 'PODYARD_OBJECTS_BUCKET', type: 'string' },
  { path: 'objects.accessKeyId', env: 'PODYARD_OBJECTS_ACCESS_KEY_ID', type: 'string' },
  { path: 'objects.secretAccessKey', env: 'PODYARD_OBJECTS_SECRET_ACCESS_KEY', type: 'string' },
  { path: 'objects.prefix', env: 'PODYARD_OBJECTS_PREFIX', type: 'string' },
  { path: 'objects.forcePathStyle', env: 'PODYARD_OBJECTS_FORCE_PATH_STYLE', type: 'boolean' },
  { path: 'billing.meterIntervalMs', env: 'PODYARD_BILLING_METER_INTERVAL_MS', type: 'integer' },
  { path: 'billing.enforce', env: 'PODYARD_BILLING_ENFORCE', type: 'boolean' },
  { path: 'adminKey', env: 'PODYARD_ADMIN_KEY', type: 'string' },
  { path: 'adminEmail', env: 'PODYARD_ADMIN_EMAIL', type: 'string' },
  { path: 'encryptionKey', env: 'PODYARD_ENCRYPTION_KEY', type: 'string' },
  { path: 'publicIp', env: 'PODYARD_PUBLIC_IP', type: 'string' },
  { path: 'sandbox', env: 'PODYARD_SANDBOX', type: 'string' },
  { path: 'podNetwork', env: 'PODYARD_POD_NETWORK', type: 'string' },
  { path: 'bwrapPath', env: 'PODYARD_BWRAP_PATH', type: 'string' },
  { path: 'driver', env: 'PODYARD_DRIVER', flag: 'driver', type: 'string' },
  { path: 'docker.socketPath', env: 'PODYARD_DOCKER_SOCKET', type: 'string' },
  { path: 'docker.diskLimit', env: 'PODYARD_DOCKER_DISK_LIMIT', type: 'boolean' },
  { path: 'gpus.probeImage', env: 'PODYARD_GPUS_PROBE_IMAGE', type: 'string' },
  { path: 'gpus.kernelLog', env: 'PODYARD_GPUS_KERNEL_LOG', type: 'string' },
  { path: 'workloadLogs.maxMb', env: 'PODYARD_WORKLOAD_LOG_MAX_MB', type: 'integer' },
  {
    path: 'containment.acceptUnenforced',
    env: 'PODYARD_CONTAINMENT_ACCEPT_UNENFORCED',
    type: 'list',
  },
  { path: 'containment.processDisk', env: 'PODYARD_CONTAINMENT_PROCESS_DISK', type: 'string' },
  {
    path: 'containment.diskWrite.mibPerSecondPerVcpu',
    env: 'PODYARD_CONTAINMENT_DISK_WRITE_MIB_PER_VCPU',
    type: 'integer',
  },
  {
    path: 'containment.diskWrite.iopsPerVcpu',
    env: 'PODYARD_CONTAINMENT_DISK_WRITE_IOPS_PER_VCPU',
    type: 'integer',
  },
  { path: 'containment.egress.allow', env: 'PODYARD_CONTAINMENT_EGRESS_ALLOW', type: 'list' },
  { path: 'containment.egress.deny', env: 'PODYARD_CONTAINMENT_EGRESS_DENY', type: 'list' },
  { path: 'hosts.probeIntervalMs', env: 'PODYARD_HOSTS_PROBE_INTERVAL_MS', type: 'integer' },
  { path: 'hosts.probeTimeoutMs', env: 'PODYARD_HOSTS_PROBE_TIMEOUT_MS', type: 'integer' },
  { path: 'hosts.failuresBeforeDown', env: 'PODYARD_HOSTS_FAILURES_BEFORE_DOWN', type: 'integer' },
  { path: 'logLevel', env: 'PODYARD_LOG_LEVEL', flag: 'logLevel', type: 'string' },
  { path: 'logFormat', env: 'PODYARD_LOG_FORMAT', type: 'string' },
  { path: 'metrics.listen', env: 'PODYARD_METRICS_LISTEN', flag: 'metricsListen', type: 'string' },
  { path: 'telemetry.traceContext', env: 'PODYARD_TRACE_CONTEXT', type: 'boolean' },
  { path: 'telemetry.otlpEndpoint', env: 'PODYARD_OTLP_ENDPOINT', type: 'string' },
  { path: 'telemetry.endpointLabels', env: 'PODYARD_METRICS_ENDPOINT_LABELS', type: 'integer' },
]
