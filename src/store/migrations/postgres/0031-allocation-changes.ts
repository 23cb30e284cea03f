/**
 * Which owners' allocations each change of the epoch (migration 0022) touched, so that a replica
 * whose index of the allocations (src/store/allocation-ledger.ts) is behind by another
 * replica's few changes applies those instead of reading every allocation again: with replicas
 * taking pod creates in turn, each create read the whole table (bench/README.md, bench/replicas).
 * The trigger that moves the epoch records the change under its new epoch and drops what is more
 * than 1 000 changes old; a replica further behind reads everything, as before.
 */
export const statements = [
  `create table allocation_changes (
    epoch bigint not null,
    owner_kind text not null,
    owner_id text not null
  )`,
  `create index allocation_changes_epoch on allocation_changes(epoch)`,
  `create or replace function allocations_bump_epoch() returns trigger language plpgsql as $$
    declare
      moved bigint;
    begin
      update allocation_epoch set epoch = epoch + 1 where id = 1 returning epoch into moved;
      if tg_op in ('UPDATE', 'DELETE') then
        insert into allocation_changes (epoch, owner_kind, owner_id)
          values (moved, old.owner_kind, old.owner_id);
      end if;
      if tg_op in ('INSERT', 'UPDATE') then
        insert into allocation_changes (epoch, owner_kind, owner_id)
          values (moved, new.owner_kind, new.owner_id);
      end if;
      delete from allocation_changes where epoch <= moved - 1000;
      return null;
    end
  $$`,
]
