import type { Generated } from 'kysely'

/**
 * Column conventions shared by both dialects so one repository serves both:
 * timestamps are ISO-8601 strings (text in SQLite, timestamptz read back as ISO in PostgreSQL),
 * JSON is a string (text in SQLite, jsonb read back unparsed in PostgreSQL), flags are
 * nullable timestamps rather than booleans.
 */
export interface AccountsTable {
  id: string
  name: string
  role: string
  created_at: string
  /** Migration 0008: the ledger's sum, nano-USD, kept in the ledger's transactions. */
  balance_nano: Generated<number>
  spend_limit_per_hour: Generated<number>
}

/** Migration 0008: every change of a balance. */
export interface CreditLedgerTable {
  id: string
  account_id: string
  amount_nano: number
  kind: string
  note: string
  created_by: string | null
  created_at: string
}

export interface UsersTable {
  id: string
  account_id: string
  email: string
  created_at: string
  /** authorized_keys text (migration 0004); null until the user sets it. */
  pub_key: string | null
}

export interface ApiKeysTable {
  id: string
  account_id: string
  name: string
  key_hash: string
  key_prefix: string
  permission: string
  endpoint_ids: string
  created_at: string
  expires_at: string | null
  revoked_at: string | null
  last_used_at: string | null
}

export interface AllocationsTable {
  id: string
  host_id: string
  owner_kind: string
  owner_id: string
  gpu_count: number
  gpu_indices: string
  vcpus: number
  memory_gb: number
  disk_gb: number
  created_at: string
}

/** Migration 0022: one row, moved by triggers on every change of the allocations. */
export interface AllocationEpochTable {
  id: number
  /** A number in SQLite, a bigint (read back as a string) in PostgreSQL. */
  epoch: number | string
}

/** Migration 0031: the owners each change of the epoch touched, the last 1 000 changes. */
export interface AllocationChangesTable {
  epoch: number | string
  owner_kind: string
  owner_id: string
}

export interface PodsTable {
  id: string
  account_id: string
  name: string
  status: string
  host_id: string | null
  version: number
  created_at: string
  terminated_at: string | null
  /** The whole pod as JSON; the columns above are copies for filtering. */
  doc: string
}

export interface PodEventsTable {
  seq: Generated<number>
  pod_id: string
  ts: string
  line: string
}

export interface NetworkVolumesTable {
  id: string
  account_id: string
  name: string
  size_gb: number
  data_center_id: string
  type: string
  created_at: string
  updated_at: string
}

/** Every size a volume has had, from its creation on, so storage can be billed by time. */
export interface NetworkVolumeSizesTable {
  seq: Generated<number>
  volume_id: string
  size_gb: number
  changed_at: string
}

export interface RegistriesTable {
  id: string
  account_id: string
  name: string
  username: string
  /** The password encrypted with the platform's key (never the password itself). */
  password_sealed: string
  created_at: string
}

export interface AccountSecretsTable {
  id: string
  account_id: string
  name: string
  description: string | null
  /** The value encrypted with the platform's key (never the value itself). */
  value_sealed: string
  created_at: string
}

export interface TemplatesTable {
  id: string
  account_id: string
  name: string
  /** `public` or `private`. */
  visibility: string
  created_at: string
  doc: string
}

export interface SettingsTable {
  key: string
  value: string
}

/** The serverless job queue (src/queue, docs/serverless-queue.md). */
export interface JobsTable {
  seq: Generated<number>
  id: string
  endpoint_id: string
  account_id: string
  status: string
  /** 1 for a /runsync job (1-minute retention), 0 for /run (30 minutes). */
  sync: number
  low_priority: number
  execution_timeout_ms: number
  ttl_ms: number
  input: string
  webhook: string | null
  s3_config: string | null
  output: string | null
  error: string | null
  worker_id: string | null
  attempts: Generated<number>
  retries: Generated<number>
  version: Generated<number>
  /** The seq of the last stream chunk appended. */
  stream_seq: Generated<number>
  /** The seq of the last stream chunk handed to a cursor-less /stream reader. */
  stream_delivered: Generated<number>
  /** The attempt whose `chunk_index`es `stream_next_index` counts (migration 0017). */
  stream_attempt: Generated<number>
  /** The `chunk_index` after the last chunk appended in `stream_attempt`; below it, a repeat. */
  stream_next_index: Generated<number>
  /** Characters of input, s3_config and webhook as stored (migration 0020): a take's budget. */
  payload_size: Generated<number>
  created_at: string
  started_at: string | null
  completed_at: string | null
  expires_at: string
  lease_expires_at: string | null
  deadline_at: string | null
  retain_until: string | null
  /** The queuing request's span as a W3C traceparent (migration 0025); null: not traced. */
  trace_parent: string | null
  /** The queuing request's id (migration 0025). */
  request_id: string | null
}

export interface JobStreamTable {
  job_id: string
  seq: number
  output: string
}

/** Jobs a worker must stop (cancelled, timed out, expired, lease lost), until it is told. */
export interface JobStopsTable {
  seq: Generated<number>
  endpoint_id: string
  worker_id: string
  job_id: string
  reason: string
  created_at: string
  /** The job's attempt the notice stops (migration 0015); 0 for notices written before it. */
  attempt: Generated<number>
}

/** Serverless endpoint definitions; `doc` is the whole Endpoint as JSON. */
export interface EndpointsTable {
  id: string
  account_id: string
  name: string
  template_id: string | null
  created_at: string
  doc: string
  /** Worker-key generation (migration 0009); rotation adds one. Not in `doc`: updates never touch it. */
  worker_key_generation: Generated<number>
}

/** Webhook deliveries of finished jobs (docs/job-api.md "Webhooks"), with their own payload copy. */
export interface WebhookDeliveriesTable {
  seq: Generated<number>
  job_id: string
  endpoint_id: string
  account_id: string
  url: string
  /** The terminal job status that caused the delivery. */
  job_status: string
  /** The JSON text POSTed: the job's `/status` body when it became terminal. */
  payload: string
  /** pending, delivered or failed. */
  status: string
  attempts: Generated<number>
  next_attempt_at: string | null
  created_at: string
  finished_at: string | null
}

/** One POST of a webhook delivery. */
export interface WebhookAttemptsTable {
  delivery_seq: number
  attempt: number
  started_at: string
  duration_ms: number
  http_status: number | null
  error: string | null
  /** delivered or failed. */
  outcome: string
}

/** Migration 0010: managed serverless workers. */
export interface WorkersTable {
  id: string
  endpoint_id: string
  account_id: string
  version: number
  key_generation: number
  phase: string
  reason: string | null
  host_id: string | null
  data_center_id: string | null
  gpu_type_id: string | null
  cpu_flavor_id: string | null
  gpu_count: number
  /** JSON array of host GPU indices. */
  gpu_indices: string
  vcpus: number
  memory_gb: number
  image: string
  created_at: string
  started_at: string | null
  phase_changed_at: string
}

/** Migration 0016: an endpoint's crash-loop backoff (src/domain/serverless/start-backoff.ts). */
export interface WorkerStartBackoffsTable {
  endpoint_id: string
  failures: number
  last_worker_id: string
  last_reason: string
  last_failed_at: string
  next_start_at: string
}

/** Migration 0016: the last lines of a failed worker's output, JSON `[{seq, ts, line}]`. */
export interface WorkerKeptLogsTable {
  worker_id: string
  lines: string
}

/** Migration 0011: one hour's usage of one resource in one category, nano-USD. */
export interface UsageRecordsTable {
  account_id: string
  resource_kind: string
  resource_id: string
  category: string
  bucket_start: string
  amount_nano: number
}

/** Migration 0011: the billing meter's state per metered resource. */
export interface UsageMetersTable {
  resource_kind: string
  resource_id: string
  account_id: string
  metered_until: string
  /** JSON: nano-USD per billing month by category. */
  rates: string
  /** JSON: sub-nano remainders by category. */
  carries: string
  detail: string | null
}

/** Migration 0012: public model jobs, their callers and settlements. */
export interface ModelJobsTable {
  job_id: string
  model_id: string
  endpoint_id: string
  account_id: string
  max_price_nano: number
  cost_nano: number | null
  object_key: string | null
  created_at: string
  settled_at: string | null
  object_expires_at: string | null
}

/** Migration 0013: the leader lease of the replicas (src/control/leader-election.ts). */
export interface ClusterLeasesTable {
  name: string
  holder: string
  acquired_at_ms: number
  expires_at_ms: number
}

/** Migration 0013: each replica's job API counters (src/store/shared-job-limits.ts). */
export interface JobRateCountsTable {
  endpoint_id: string
  operation: string
  replica_id: string
  window_start_ms: number
  count: number
  in_flight: number
  updated_at_ms: number
}

/** Migration 0013: workers' last calls, shared by the replicas. */
export interface WorkerPresenceTable {
  endpoint_id: string
  worker_id: string
  last_seen_ms: number
  /** JSON array of job ids. */
  job_ids: string
  /** JSON `{check, reason}` or null. */
  unhealthy: string | null
  recycle: number
}

/** Migration 0016: one row per endpoint version (docs/serverless-endpoints.md, Releases). */
export interface EndpointReleasesTable {
  id: string
  endpoint_id: string
  version: number
  created_at: string
  /** JSON array of {field, old, new}. */
  diff: string
}

/** Migration 0017: instant clusters, kept (deleted_at) after deletion for billing. */
export interface ClustersTable {
  id: string
  account_id: string
  name: string
  created_at: string
  deleted_at: string | null
  /** JSON of the whole Cluster. */
  doc: string
}

/** Migration 0021: each host's probed state and schedule (src/domain/hosts/host-state.ts). */
/** A GPU withdrawn from placement, or put back by the operator (migration 0027). */
export interface GpuWithdrawalsTable {
  host_id: string
  gpu_index: number
  /** Why it is withdrawn; null: the operator reset it. */
  reason: string | null
  withdrawn_at: string | null
  ecc_uncorrected: number | null
  accepted_ecc_uncorrected: number
  updated_at: string
}

export interface HostStatesTable {
  host_id: string
  state: string
  reason: string | null
  since: string
  checked_at: string | null
  /** JSON HostFacts or null. */
  facts: string | null
  /** JSON array of strings. */
  warnings: string
  schedule: string
  schedule_changed_at: string | null
}

/** Migration 0024: the admin's quotas of an account; null is no quota. */
export interface AccountQuotasTable {
  account_id: string
  gpus: number | null
  pods: number | null
  workers: number | null
  volume_gb: number | null
  updated_at: string
}

/** Migration 0028: the pools an account is bound to, one row each. */
export interface AccountPoolsTable {
  account_id: string
  pool: string
  created_at: string
}

/** Migration 0029: an image on a host, pulled ahead of time (or found there), and its pull. */
export interface HostImagesTable {
  host_id: string
  image: string
  state: string
  reason: string | null
  /** A number in SQLite, a bigint (read back as a string) in PostgreSQL. */
  bytes_done: number | string | null
  bytes_total: number | string | null
  started_at: string
  updated_at: string
}

/** Migration 0030: a Docker container's log numbers (runtime/docker/log-numbering.ts), JSON. */
export interface ContainerLogNumbersTable {
  container_id: string
  numbers: string
  updated_at: string
}

/** Migration 0026: hosts added at runtime; `declaration` is the JSON of a fleet Host. */
export interface HostsTable {
  id: string
  declaration: string
  created_at: string
  updated_at: string
}

/** Migration 0026: one row counting every change of `hosts`. */
export interface HostsRevisionTable {
  id: number
  revision: number
}

export interface Database {
  accounts: AccountsTable
  credit_ledger: CreditLedgerTable
  users: UsersTable
  api_keys: ApiKeysTable
  allocations: AllocationsTable
  allocation_epoch: AllocationEpochTable
  allocation_changes: AllocationChangesTable
  pods: PodsTable
  pod_events: PodEventsTable
  network_volumes: NetworkVolumesTable
  network_volume_sizes: NetworkVolumeSizesTable
  registries: RegistriesTable
  account_secrets: AccountSecretsTable
  account_quotas: AccountQuotasTable
  account_pools: AccountPoolsTable
  host_images: HostImagesTable
  container_log_numbers: ContainerLogNumbersTable
  templates: TemplatesTable
  settings: SettingsTable
  jobs: JobsTable
  job_stream: JobStreamTable
  job_stops: JobStopsTable
  webhook_deliveries: WebhookDeliveriesTable
  webhook_attempts: WebhookAttemptsTable
  endpoints: EndpointsTable
  endpoint_releases: EndpointReleasesTable
  clusters: ClustersTable
  host_states: HostStatesTable
  hosts: HostsTable
  hosts_revision: HostsRevisionTable
  gpu_withdrawals: GpuWithdrawalsTable
  workers: WorkersTable
  model_jobs: ModelJobsTable
  usage_records: UsageRecordsTable
  usage_meters: UsageMetersTable
  cluster_leases: ClusterLeasesTable
  job_rate_counts: JobRateCountsTable
  worker_presence: WorkerPresenceTable
  worker_start_backoffs: WorkerStartBackoffsTable
  worker_kept_logs: WorkerKeptLogsTable
}
