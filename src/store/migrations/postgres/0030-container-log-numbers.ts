/**
 * Where each Docker container's log numbers fall across Docker's log rotation
 * (runtime/docker/log-numbering.ts): one row per container with its anchors and the newest line
 * numbered (JSON), so that every replica, and a server started again, numbers a container's log
 * as the others did. Before, each server kept them in files of its own data directory.
 */
export const statements = [
  `create table container_log_numbers (
    container_id text primary key,
    numbers text not null,
    updated_at text not null
  )`,
]
