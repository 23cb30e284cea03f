/**
 * Images pulled ahead of time on each host (docs/fleet.md, "Images ahead of time"): one row per
 * host and image with the pull's state, so every replica sees what is on which host and a pull
 * in flight on one replica is joined, not started again, by another.
 */
export const statements = [
  `create table host_images (
    host_id text not null,
    image text not null,
    state text not null,
    reason text,
    bytes_done bigint,
    bytes_total bigint,
    started_at text not null,
    updated_at text not null,
    primary key (host_id, image)
  )`,
]
