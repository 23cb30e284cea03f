/**
 * A counter of the changes to the allocations, moved by a trigger in the writing transaction
 * itself: each replica keeps an index of the allocations in memory
 * (src/store/allocation-ledger.ts) and reads this one row to know whether anyone else changed
 * them since. Every inserted, updated or deleted allocation row adds one.
 */
export const statements = [
  `create table allocation_epoch (
    id integer primary key check (id = 1),
    epoch bigint not null
  )`,
  `insert into allocation_epoch (id, epoch) values (1, 0)`,
  `create function allocations_bump_epoch() returns trigger language plpgsql as $$
    begin
      update allocation_epoch set epoch = epoch + 1 where id = 1;
      return null;
    end
  $$`,
  `create trigger allocations_epoch after insert or update or delete on allocations
    for each row execute function allocations_bump_epoch()`,
]
