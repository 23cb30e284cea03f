/**
 * GPU withdrawals (docs/gpus.md, "Health rules"): a GPU the health rules took out of placement
 * stays out after a restart and for every replica, until the operator resets it. A row with a
 * null reason is a GPU the operator put back; accepted_ecc_uncorrected is the uncorrectable ECC
 * count that reset accepted (volatile counts only drop at a driver reload), ecc_uncorrected the
 * count when it was withdrawn (null: unknown). Times are ISO text.
 */
export const statements = [
  `create table gpu_withdrawals (
    host_id text not null,
    gpu_index integer not null,
    reason text,
    withdrawn_at text,
    ecc_uncorrected integer,
    accepted_ecc_uncorrected integer not null,
    updated_at text not null,
    primary key (host_id, gpu_index)
  )`,
]
