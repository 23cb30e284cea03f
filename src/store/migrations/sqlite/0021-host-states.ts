/**
 * Host states (docs/fleet.md, "Host state"): what the leader's probes found (UP, DOWN, with the
 * reason and since when, what the engine reports and where it disagrees with the fleet file)
 * and the operator's schedule (ACTIVE, CORDONED, DRAINING), so that every replica and a
 * restarted server agree. Times are ISO text; facts and warnings JSON text.
 */
export const statements = [
  `create table host_states (
    host_id text primary key,
    state text not null,
    reason text,
    since text not null,
    checked_at text,
    facts text,
    warnings text not null,
    schedule text not null,
    schedule_changed_at text
  )`,
]
