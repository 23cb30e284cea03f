import { BillingMeter } from '../control/billing-meter.js'
import { BillingGuard, runningSpendPerHour } from '../domain/billing/billing-guard.js'
import { BillingReportService } from '../domain/billing/billing-reports.js'
import type { PodFilter } from '../domain/pods/ports.js'
import { CreditService } from '../domain/billing/credit-service.js'
import { KyselyCreditRepo } from '../store/credit-repo.js'
import { KyselyEndpointRepo } from '../store/endpoint-repo.js'
import { KyselyNetworkVolumeRepo } from '../store/network-volume-repo.js'
import { KyselyUsageRepo } from '../store/usage-repo.js'
import type { BillingParts, PlatformContext } from './platform-context.js'

/**
 * Billing (docs/billing.md): credit balances, usage, the spend guard (it refuses only when
 * `billing.enforce`) and the meter, which charges always and stops an account's pods once it is
 * out of credits.
 */
export function wireBilling(context: PlatformContext): BillingParts {
  const { config, store, clock, logger, parts } = context
  const creditRepo = new KyselyCreditRepo(store.db)
  const usage = new KyselyUsageRepo(store.db)
  // Pods and workers are the later areas': looked up when the guard and the meter run.
  const pods = { list: (filter: PodFilter) => parts.pods.podStore.pods.list(filter) }
  const workers = { listAll: () => parts.serverless.workerRepo.listAll() }
  const guard = new BillingGuard({
    credits: creditRepo,
    enforce: config.billing.enforce,
    spendPerHour: async (accountId) =>
      runningSpendPerHour(
        await pods.list({ accountId, statuses: ['PROVISIONING', 'STARTING', 'RUNNING'] }),
        (await workers.listAll()).filter((w) => w.accountId === accountId),
        parts.fleet.fleet.prices,
      ),
    // The operator's own account and the platform's public models are never stopped.
    exempt: async (accountId) =>
      accountId === parts.accounts.modelsAccount.id ||
      (await parts.accounts.accounts.findAccount(accountId))?.role === 'admin',
  })
  const meter = new BillingMeter({
    timers: context.timers,
    usage,
    pods,
    workers,
    endpoints: new KyselyEndpointRepo(store.db),
    volumes: new KyselyNetworkVolumeRepo(store.db),
    prices: parts.fleet.fleet.prices,
    clock,
    logger,
    intervalMs: config.billing.meterIntervalMs,
    afterCharge: async (credit) => {
      if (!(await guard.outOfCredits(credit))) return
      const stopped = await parts.pods.pods.stopAll(
        credit.accountId,
        'the account is out of credits (balance at or below zero)',
      )
      if (stopped.length > 0) {
        logger.warn({ accountId: credit.accountId, pods: stopped }, 'out of credits: pods stopped')
      }
    },
  })
  return {
    credits: new CreditService(creditRepo, clock),
    creditRepo,
    usage,
    guard,
    reports: new BillingReportService({ usage, clock }),
    meter,
  }
}
