/**
 * A counter of the changes to the allocations, moved by triggers in the writing transaction
 * itself: a server keeps an index of the allocations in memory (src/store/allocation-ledger.ts)
 * and reads this one row to know whether anyone else changed them since (another replica, a
 * tool). Every inserted, updated or deleted allocation row adds one.
 */
export const statements = [
  `create table allocation_epoch (
    id integer primary key check (id = 1),
    epoch integer not null
  )`,
  `insert into allocation_epoch (id, epoch) values (1, 0)`,
  `create trigger allocations_epoch_insert after insert on allocations
    begin update allocation_epoch set epoch = epoch + 1 where id = 1; end`,
  `create trigger allocations_epoch_update after update on allocations
    begin update allocation_epoch set epoch = epoch + 1 where id = 1; end`,
  `create trigger allocations_epoch_delete after delete on allocations
    begin update allocation_epoch set epoch = epoch + 1 where id = 1; end`,
]
