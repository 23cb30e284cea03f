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
}

export interface UsersTable {
  id: string
  account_id: string
  email: string
  created_at: string
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

export interface Database {
  accounts: AccountsTable
  users: UsersTable
  api_keys: ApiKeysTable
  allocations: AllocationsTable
  pods: PodsTable
  pod_events: PodEventsTable
}
