/**
 * Hosts added at runtime (docs/fleet.md, "Adding a machine"): each host's declaration as JSON,
 * in the fleet file's form with its defaults applied. The one-row revision counts every change,
 * in the writing transaction, so that each replica reads one row to know whether its fleet is
 * still the database's.
 */
export const statements = [
  `create table hosts (
    id text primary key,
    declaration text not null,
    created_at text not null,
    updated_at text not null
  )`,
  `create table hosts_revision (
    id integer primary key check (id = 1),
    revision integer not null
  )`,
  `insert into hosts_revision (id, revision) values (1, 0)`,
]
