/**
 * Which owners' allocations each change of the epoch (migration 0022) touched, so that a server
 * whose index of the allocations (src/store/allocation-ledger.ts) is behind by another
 * replica's few changes applies those instead of reading every allocation again: with replicas
 * taking pod creates in turn, each create read the whole table (bench/README.md, bench/replicas).
 * The triggers that move the epoch record the change under its new epoch and drop what is more
 * than 1 000 changes old; a server further behind reads everything, as before.
 */
export const statements = [
  `create table allocation_changes (
    epoch integer not null,
    owner_kind text not null,
    owner_id text not null
  )`,
  `create index allocation_changes_epoch on allocation_changes(epoch)`,
  `drop trigger allocations_epoch_insert`,
  `drop trigger allocations_epoch_update`,
  `drop trigger allocations_epoch_delete`,
  `create trigger allocations_epoch_insert after insert on allocations begin
    update allocation_epoch set epoch = epoch + 1 where id = 1;
    insert into allocation_changes (epoch, owner_kind, owner_id)
      select epoch, new.owner_kind, new.owner_id from allocation_epoch where id = 1;
    delete from allocation_changes
      where epoch <= (select epoch from allocation_epoch where id = 1) - 1000;
  end`,
  `create trigger allocations_epoch_update after update on allocations begin
    update allocation_epoch set epoch = epoch + 1 where id = 1;
    insert into allocation_changes (epoch, owner_kind, owner_id)
      select epoch, old.owner_kind, old.owner_id from allocation_epoch where id = 1;
    insert into allocation_changes (epoch, owner_kind, owner_id)
      select epoch, new.owner_kind, new.owner_id from allocation_epoch where id = 1;
    delete from allocation_changes
      where epoch <= (select epoch from allocation_epoch where id = 1) - 1000;
  end`,
  `create trigger allocations_epoch_delete after delete on allocations begin
    update allocation_epoch set epoch = epoch + 1 where id = 1;
    insert into allocation_changes (epoch, owner_kind, owner_id)
      select epoch, old.owner_kind, old.owner_id from allocation_epoch where id = 1;
    delete from allocation_changes
      where epoch <= (select epoch from allocation_epoch where id = 1) - 1000;
  end`,
]
