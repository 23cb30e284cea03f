import * as postgres0001 from './postgres/0001-accounts-and-capacity.js'
import * as postgres0002 from './postgres/0002-pods.js'
import * as postgres0003 from './postgres/0003-templates-volumes-registries.js'
import * as postgres0004 from './postgres/0004-user-settings.js'
import * as postgres0005 from './postgres/0005-jobs.js'
import * as postgres0006 from './postgres/0006-endpoints.js'
import * as postgres0007 from './postgres/0007-webhook-deliveries.js'
import * as postgres0008 from './postgres/0008-credits.js'
import * as postgres0009 from './postgres/0009-endpoint-worker-keys.js'
import * as postgres0010 from './postgres/0010-workers.js'
import * as postgres0011 from './postgres/0011-usage.js'
import * as postgres0012 from './postgres/0012-model-jobs.js'
import * as postgres0013 from './postgres/0013-replicas.js'
import * as postgres0014 from './postgres/0014-job-sweep-indexes.js'
import * as postgres0015 from './postgres/0015-stop-notice-attempts.js'
import * as postgres0016 from './postgres/0016-worker-crash-loops.js'
import * as postgres0017 from './postgres/0017-job-stream-chunk-index.js'
import * as postgres0018 from './postgres/0018-endpoint-releases.js'
import * as postgres0019 from './postgres/0019-clusters.js'
import * as postgres0020 from './postgres/0020-job-payload-size-and-retried-index.js'
import * as postgres0021 from './postgres/0021-host-states.js'
import * as postgres0022 from './postgres/0022-allocation-epoch.js'
import * as postgres0023 from './postgres/0023-account-secrets.js'
import * as sqlite0001 from './sqlite/0001-accounts-and-capacity.js'
import * as sqlite0002 from './sqlite/0002-pods.js'
import * as sqlite0003 from './sqlite/0003-templates-volumes-registries.js'
import * as sqlite0004 from './sqlite/0004-user-settings.js'
import * as sqlite0005 from './sqlite/0005-jobs.js'
import * as sqlite0006 from './sqlite/0006-endpoints.js'
import * as sqlite0007 from './sqlite/0007-webhook-deliveries.js'
import * as sqlite0008 from './sqlite/0008-credits.js'
import * as sqlite0009 from './sqlite/0009-endpoint-worker-keys.js'
import * as sqlite0010 from './sqlite/0010-workers.js'
import * as sqlite0011 from './sqlite/0011-usage.js'
import * as sqlite0012 from './sqlite/0012-model-jobs.js'
import * as sqlite0013 from './sqlite/0013-replicas.js'
import * as sqlite0014 from './sqlite/0014-job-sweep-indexes.js'
import * as sqlite0015 from './sqlite/0015-stop-notice-attempts.js'
import * as sqlite0016 from './sqlite/0016-worker-crash-loops.js'
import * as sqlite0017 from './sqlite/0017-job-stream-chunk-index.js'
import * as sqlite0018 from './sqlite/0018-endpoint-releases.js'
import * as sqlite0019 from './sqlite/0019-clusters.js'
import * as sqlite0020 from './sqlite/0020-job-payload-size-and-retried-index.js'
import * as sqlite0021 from './sqlite/0021-host-states.js'
import * as sqlite0022 from './sqlite/0022-allocation-epoch.js'
import * as sqlite0023 from './sqlite/0023-account-secrets.js'
import * as postgres0024 from './postgres/0024-account-quotas.js'
import * as sqlite0024 from './sqlite/0024-account-quotas.js'
import * as postgres0025 from './postgres/0025-job-trace-context.js'
import * as sqlite0025 from './sqlite/0025-job-trace-context.js'
import * as postgres0026 from './postgres/0026-hosts.js'
import * as sqlite0026 from './sqlite/0026-hosts.js'
import * as postgres0027 from './postgres/0027-gpu-withdrawals.js'
import * as sqlite0027 from './sqlite/0027-gpu-withdrawals.js'
import * as postgres0028 from './postgres/0028-account-pools.js'
import * as sqlite0028 from './sqlite/0028-account-pools.js'
import * as postgres0029 from './postgres/0029-host-images.js'
import * as sqlite0029 from './sqlite/0029-host-images.js'
import * as postgres0030 from './postgres/0030-container-log-numbers.js'
import * as sqlite0030 from './sqlite/0030-container-log-numbers.js'
import * as postgres0031 from './postgres/0031-allocation-changes.js'
import * as sqlite0031 from './sqlite/0031-allocation-changes.js'
import type { Dialect } from '../open-store.js'

/**
 * Numbered migrations, the same numbers and names for both dialects. Append only: a released
 * migration is never edited, and its name is how the ledger recognises it.
 */
export const migrationList: ReadonlyArray<{ name: string; sqlite: string[]; postgres: string[] }> =
  [
    {
      name: '0001-accounts-and-capacity',
      sqlite: sqlite0001.statements,
      postgres: postgres0001.statements,
    },
    { name: '0002-pods', sqlite: sqlite0002.statements, postgres: postgres0002.statements },
    {
      name: '0003-templates-volumes-registries',
      sqlite: sqlite0003.statements,
      postgres: postgres0003.statements,
    },
    {
      name: '0004-user-settings',
      sqlite: sqlite0004.statements,
      postgres: postgres0004.statements,
    },
    { name: '0005-jobs', sqlite: sqlite0005.statements, postgres: postgres0005.statements },
    {
      name: '0006-endpoints',
      sqlite: sqlite0006.statements,
      postgres: postgres0006.statements,
    },
    {
      name: '0007-webhook-deliveries',
      sqlite: sqlite0007.statements,
      postgres: postgres0007.statements,
    },
    { name: '0008-credits', sqlite: sqlite0008.statements, postgres: postgres0008.statements },
    {
      name: '0009-endpoint-worker-keys',
      sqlite: sqlite0009.statements,
      postgres: postgres0009.statements,
    },
    { name: '0010-workers', sqlite: sqlite0010.statements, postgres: postgres0010.statements },
    { name: '0011-usage', sqlite: sqlite0011.statements, postgres: postgres0011.statements },
    {
      name: '0012-model-jobs',
      sqlite: sqlite0012.statements,
      postgres: postgres0012.statements,
    },
    { name: '0013-replicas', sqlite: sqlite0013.statements, postgres: postgres0013.statements },
    {
      name: '0014-job-sweep-indexes',
      sqlite: sqlite0014.statements,
      postgres: postgres0014.statements,
    },
    {
      name: '0015-stop-notice-attempts',
      sqlite: sqlite0015.statements,
      postgres: postgres0015.statements,
    },
    {
      name: '0016-worker-crash-loops',
      sqlite: sqlite0016.statements,
      postgres: postgres0016.statements,
    },
    {
      name: '0017-job-stream-chunk-index',
      sqlite: sqlite0017.statements,
      postgres: postgres0017.statements,
    },
    {
      name: '0018-endpoint-releases',
      sqlite: sqlite0018.statements,
      postgres: postgres0018.statements,
    },
    { name: '0019-clusters', sqlite: sqlite0019.statements, postgres: postgres0019.statements },
    {
      name: '0020-job-payload-size-and-retried-index',
      sqlite: sqlite0020.statements,
      postgres: postgres0020.statements,
    },
    {
      name: '0021-host-states',
      sqlite: sqlite0021.statements,
      postgres: postgres0021.statements,
    },
    {
      name: '0022-allocation-epoch',
      sqlite: sqlite0022.statements,
      postgres: postgres0022.statements,
    },
    {
      name: '0023-account-secrets',
      sqlite: sqlite0023.statements,
      postgres: postgres0023.statements,
    },
    {
      name: '0024-account-quotas',
      sqlite: sqlite0024.statements,
      postgres: postgres0024.statements,
    },
    {
      name: '0025-job-trace-context',
      sqlite: sqlite0025.statements,
      postgres: postgres0025.statements,
    },
    { name: '0026-hosts', sqlite: sqlite0026.statements, postgres: postgres0026.statements },
    {
      name: '0027-gpu-withdrawals',
      sqlite: sqlite0027.statements,
      postgres: postgres0027.statements,
    },
    {
      name: '0028-account-pools',
      sqlite: sqlite0028.statements,
      postgres: postgres0028.statements,
    },
    {
      name: '0029-host-images',
      sqlite: sqlite0029.statements,
      postgres: postgres0029.statements,
    },
    {
      name: '0030-container-log-numbers',
      sqlite: sqlite0030.statements,
      postgres: postgres0030.statements,
    },
    {
      name: '0031-allocation-changes',
      sqlite: sqlite0031.statements,
      postgres: postgres0031.statements,
    },
  ]

export function migrationStatements(dialect: Dialect) {
  return migrationList.map((m) => ({ name: m.name, statements: m[dialect] }))
}
