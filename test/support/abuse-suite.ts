import type { Server } from 'node:net'
import { networkInterfaces } from 'node:os'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  dataDirBytes,
  READYZ_BOUND_MS,
  SERVER_RSS_BOUND_MIB,
  startAbusePlatform,
  watchPlatform,
  type AbusePlatform,
} from './abuse-platform.js'
import {
  forkBomb,
  MEMORY_HOG,
  portScanScript,
  probeScript,
  secretServer,
} from './hostile-workloads.js'
import { json, podLog } from './http.js'
import type { CallInit } from './platform.js'
import { until, untilFound } from './until.js'

/**
 * The abuse suite (docs/security.md, "The abuse suite"), the same attacks on each driver: as an
 * ordinary account, a fork bomb, a memory hog, writing past `disk`, a log flood, a port scan,
 * connections to another tenant's undeclared port and the platform's API on loopback, and the
 * metadata address. Each attack is its own pod; for each, the limit holds (the pod or its log
 * says so), `/readyz` answers within READYZ_BOUND_MS, the server's VmRSS stays under
 * SERVER_RSS_BOUND_MIB, the data directory grows by at most the log budget, and another
 * account's pod goes on untouched.
 */

/** workloadLogs.maxMb of the suite's platform: each workload's log budget. */
export const LOG_CAP_MB = 2
const MIB = 1024 * 1024
/**
 * What the data directory may grow past the log budget in one attack: one rotated log entry
 * (workload-log-budget.test.ts) and the database's own pages for a pod and its events.
 */
const DATA_DIR_SLACK_BYTES = MIB
/** The log flood: 1 million numbered lines (6.9 MB), past the budget many times over. */
const FLOOD_LINES = 1_000_000
/** The victim's port that it does not declare. */
const UNDECLARED_PORT = 9000
const METADATA = '169.254.169.254'

export interface AbuseDriver {
  /** For names and what the suite prints. */
  name: string
  /** The image of every pod: one with sh, dd, seq and node. */
  image: string
  /** The driver's part of podyard.yaml (workloadLogs is the suite's). */
  config: Record<string, unknown>
  /** A fleet with one host of two GPUs, 2 vCPUs and 2 GB: a one-GPU pod rents 1 vCPU and 1 GB. */
  fleet: string
  /** The fork bomb's failed forks print nothing (bash prints a line for each). */
  quietForkBomb: boolean
  /**
   * Checks what writing past a `disk: 1` pod's container disk did, from its log. 'uncontained':
   * the host bounds no disk (it says so, and the operator accepted it), so the write went on and
   * the latency bound is not held for it: the platform's own writes wait behind it on the same
   * disk (docs/security.md, "The abuse suite"); the figure is still printed.
   */
  checkDiskFill(
    platform: AbusePlatform,
    podId: string,
    log: string[],
  ): Promise<'contained' | 'uncontained'> | 'contained' | 'uncontained'
  /** The address of another pod, as a tenant who scanned its network would find it. */
  podAddress?(podId: string): string | undefined
  /** Bytes a pod's log takes outside the data directory (the engine's log files). */
  logBytesOutside?(podId: string): number
  /** Removes what the pods `podIds` may have left once the server is gone. */
  cleanUp?(podIds: string[]): void
}

interface PodJson {
  id: string
  status: string
  statusReason: string | null
  runtime: { ports: { private: number; public: number }[] } | null
}

/** The host's own IPv4 addresses, but those of bridges and veths of containers and tests. */
function hostAddresses(): string[] {
  return Object.entries(networkInterfaces())
    .filter(([name]) => !/^(docker|br-|veth|pyd|kdn|pyt)/.test(name))
    .flatMap(([, addresses]) => addresses ?? [])
    .filter((a) => a.family === 'IPv4' && !a.internal)
    .map((a) => a.address)
}

export function abuseSuite(driver: AbuseDriver): void {
  describe(`abuse on the ${driver.name} driver, by an ordinary account`, () => {
    let platform: AbusePlatform
    let attacker: (p: string, init?: CallInit) => Promise<Response>
    let victimCall: (p: string, init?: CallInit) => Promise<Response>
    let victim: PodJson
    let victimToken: string
    let victimPublicPort: number
    const servers: Server[] = []
    /** Every pod the suite made, for the driver's clean-up. */
    const podIds: string[] = []
    const metadataAdded = { done: false }

    const waitPod = (
      call: typeof attacker,
      id: string,
      what: string,
      done: (pod: PodJson, log: string[]) => boolean,
      timeoutMs = 90_000,
    ) => {
      let last = ''
      return untilFound(
        what,
        async () => {
          // Slower than untilFound's pace: the account's rate limit (600 a minute) holds.
          await new Promise((resolve) => setTimeout(resolve, 300))
          const pod = await json<PodJson>(await call(`/v2/pods/${id}`))
          // The newest lines: what each attack prints at its end.
          const log = await podLog(call, id, 'container', 100)
          last = `${pod.status} (${pod.statusReason}); log ends ${JSON.stringify(log.slice(-5))}`
          return done(pod, log) ? { pod, log } : undefined
        },
        timeoutMs,
      ).catch((error: Error) => {
        throw new Error(`${error.message}: the pod was ${last}`)
      })
    }

    /** What the victim's declared port answers: the token it drew at its (only) start. */
    const victimAnswer = () =>
      fetch(`http://127.0.0.1:${victimPublicPort}/`, { signal: AbortSignal.timeout(5_000) })
        .then((r) => r.text())
        .catch((error: Error) => `no answer: ${error.message}`)

    beforeAll(async () => {
      platform = await startAbusePlatform(
        { ...driver.config, workloadLogs: { maxMb: LOG_CAP_MB } },
        driver.fleet,
      )
      const attackerKey = await platform.memberKey(`attacker-${driver.name}@example.com`)
      const victimKey = await platform.memberKey(`victim-${driver.name}@example.com`)
      attacker = (p, init = {}) => platform.call(p, { ...init, key: attackerKey })
      victimCall = (p, init = {}) => platform.call(p, { ...init, key: victimKey })
      const created = await json<PodJson>(
        await victimCall('/v2/pods', {
          method: 'POST',
          json: {
            name: 'victim',
            image: driver.image,
            gpu: { id: 'NVIDIA L4', count: 1 },
            ports: ['8080/http'],
            args:
              'exec node -e \'const token = require("crypto").randomUUID(); console.log("victim-started " + token); ' +
              'require("http").createServer((q, r) => r.end(token)).listen(process.env.RUNPOD_TCP_PORT_8080 || 8080); ' +
              `require("net").createServer((s) => s.end("SECRET-victim")).listen(${UNDECLARED_PORT}, "0.0.0.0")'`,
          },
        }),
        201,
      )
      podIds.push(created.id)
      const { pod, log } = await waitPod(
        victimCall,
        created.id,
        'the victim pod to run',
        (pod, log) => pod.status === 'RUNNING' && log.some((l) => l.startsWith('victim-started ')),
      )
      victim = pod
      victimToken = log.find((l) => l.startsWith('victim-started '))!.slice(15)
      victimPublicPort = pod.runtime!.ports.find((p) => p.private === 8080)!.public
      await until('its declared port to answer', victimAnswer, (text) => text === victimToken)
    }, 120_000)

    afterAll(async () => {
      for (const server of servers) server.close()
      if (metadataAdded.done) {
        const { execFileSync } = await import('node:child_process')
        execFileSync('ip', ['addr', 'delete', `${METADATA}/32`, 'dev', 'lo'])
      }
      if (victim) {
        await victimCall(`/v2/pods/${victim.id}`, { method: 'DELETE' })
        await untilFound('the victim pod to go', async () => {
          const gone = await victimCall(`/v2/pods/${victim.id}`)
          if (gone.status === 404) return true
          return (await json<PodJson>(gone)).status === 'TERMINATED' ? true : undefined
        }).catch(() => undefined)
      }
      await platform?.close()
      driver.cleanUp?.(podIds)
    }, 60_000)

    /**
     * Runs `args` as the attacker's pod until `done`, watching the platform meanwhile; checks
     * the bounds every attack shares, then `check`, and terminates the pod.
     */
    const attack = async (
      name: string,
      body: Record<string, unknown>,
      done: (pod: PodJson, log: string[]) => boolean,
      check: (pod: PodJson, log: string[]) => Promise<unknown> | unknown,
      timeoutMs = 90_000,
    ) => {
      let contained = true
      const before = dataDirBytes(platform.dataDir)
      const watcher = await watchPlatform(platform)
      let seen: Awaited<ReturnType<typeof waitPod>>
      let podId: string | undefined
      // What the attack itself failed with, reported ahead of the bounds it may also break.
      let failure: unknown
      try {
        const created = await json<PodJson>(
          await attacker('/v2/pods', {
            method: 'POST',
            json: { name, image: driver.image, gpu: { id: 'NVIDIA L4', count: 1 }, ...body },
          }),
          201,
        )
        podId = created.id
        podIds.push(podId)
        seen = await waitPod(attacker, podId, `the ${name} to be done`, done, timeoutMs)
        contained = (await check(seen.pod, seen.log)) !== 'uncontained'
      } catch (error) {
        failure = error
      }
      const watched = await watcher.stop()
      const grown = dataDirBytes(platform.dataDir) - before
      console.log(
        `abuse ${driver.name} ${name}: /readyz slowest ${watched.readyzMaxMs.toFixed(1)} ms of ${watched.samples} ` +
          `(server's event loop delayed ${watched.eventLoopMaxMs.toFixed(1)} ms at most), ` +
          `server VmRSS at most ${watched.rssMaxMib.toFixed(0)} MiB, data directory +${(grown / 1024).toFixed(0)} KiB`,
      )
      if (podId) await attacker(`/v2/pods/${podId}`, { method: 'DELETE' })
      if (failure !== undefined) throw failure
      expect(watched.readyzFailures, 'failed /readyz answers').toEqual([])
      expect(watched.samples).toBeGreaterThan(0)
      if (contained) expect(watched.readyzMaxMs).toBeLessThan(READYZ_BOUND_MS)
      expect(watched.rssMaxMib).toBeLessThan(SERVER_RSS_BOUND_MIB)
      expect(grown).toBeLessThanOrEqual(LOG_CAP_MB * MIB + DATA_DIR_SLACK_BYTES)
      // The other tenant's pod: still RUNNING, never restarted, its declared port answering.
      const other = await json<PodJson>(await victimCall(`/v2/pods/${victim.id}`))
      expect(other.status).toBe('RUNNING')
      expect(await victimAnswer()).toBe(victimToken)
      const starts = (await podLog(victimCall, victim.id)).filter((l) =>
        l.startsWith('victim-started '),
      )
      expect(starts).toEqual([`victim-started ${victimToken}`])
      expect((await podLog(victimCall, victim.id, 'system')).join('\n')).not.toMatch(/restart/)
      await untilFound('the attacking pod to go', async () => {
        const gone = await attacker(`/v2/pods/${podId}`)
        if (gone.status === 404) return true
        return (await json<PodJson>(gone)).status === 'TERMINATED' ? true : undefined
      })
    }

    const runningWith = (marker: string) => (pod: PodJson, log: string[]) =>
      pod.status === 'RUNNING' && log.some((l) => l.startsWith(marker))

    it('a fork bomb stops at its processes bound', async () => {
      await attack(
        'fork-bomb',
        { args: forkBomb({ quiet: driver.quietForkBomb }) },
        runningWith('forked '),
        (_, log) => {
          const forked = Number(log.find((l) => l.startsWith('forked '))!.slice(7))
          // 512 processes per vCPU, a few of them the launch's and the pod's shell.
          expect(forked).toBeLessThan(512)
          expect(forked).toBeGreaterThan(480)
        },
      )
    }, 150_000)

    it('a memory hog is killed at its 1 GB and told so', async () => {
      await attack(
        'memory-hog',
        { args: MEMORY_HOG },
        (pod) => /^out of memory: the pod used its 1 GB/.test(pod.statusReason ?? ''),
        async (pod, log) => {
          expect(pod.statusReason).toMatch(/^out of memory: the pod used its 1 GB/)
          expect(log).not.toContain('survived')
          expect((await podLog(attacker, pod.id, 'system')).join('\n')).toMatch(
            /out of memory: the pod used its 1 GB/,
          )
        },
      )
    }, 150_000)

    it('writing past its disk stops at the disk', async () => {
      await attack(
        'disk-fill',
        {
          disk: 1,
          args:
            'dd if=/dev/zero of=$HOME/fill bs=1M count=1536 2>&1; echo "dd exit $?"; ' +
            'echo disk-done; exec sleep 600',
        },
        runningWith('disk-done'),
        (pod, log) => driver.checkDiskFill(platform, pod.id, log),
        120_000,
      )
    }, 180_000)

    it(`a log flood keeps to the log budget (${LOG_CAP_MB} MiB)`, async () => {
      await attack(
        'log-flood',
        { args: `seq 1 ${FLOOD_LINES}; echo flood-done; exec sleep 600` },
        runningWith('flood-done'),
        (pod, log) => {
          expect(log.slice(-2)).toEqual([String(FLOOD_LINES), 'flood-done'])
          // The engine's log files, where the driver keeps the log outside the data directory.
          const outside = driver.logBytesOutside?.(pod.id) ?? 0
          console.log(
            `abuse ${driver.name} log-flood: ${outside} bytes of log outside the data directory`,
          )
          expect(outside).toBeLessThanOrEqual(LOG_CAP_MB * MIB + DATA_DIR_SLACK_BYTES)
        },
        120_000,
      )
    }, 180_000)

    it("a port scan of 127.0.0.1 and of the host's addresses finds nothing open", async () => {
      const apiPort = Number(new URL(platform.url).port)
      const extra = [apiPort, 5432, 6379, UNDECLARED_PORT, victimPublicPort]
      const ports = [...new Set([...Array.from({ length: 1024 }, (_, i) => i + 1), ...extra])]
      const hosts = ['127.0.0.1', 'gateway', ...hostAddresses()]
      let scanned: string[] = []
      await attack(
        'port-scan',
        { args: portScanScript(hosts, ports) },
        runningWith('scan-done'),
        (_, log) => {
          scanned = log.filter((l) => l.startsWith('SCAN '))
          expect(scanned).toHaveLength(hosts.length)
          for (const line of scanned) expect(line).toMatch(/^SCAN \S+ (none|open= )/)
        },
        120_000,
      )
      console.log(`abuse ${driver.name} port-scan: ${scanned.join('; ')}`)
    }, 180_000)

    it("connections to another tenant's undeclared port and to the platform's API on loopback are refused", async () => {
      const apiPort = Number(new URL(platform.url).port)
      const targets: Record<string, [string, number]> = {
        'api-loopback': ['127.0.0.1', apiPort],
        'other-tenant-loopback': ['127.0.0.1', UNDECLARED_PORT],
        'api-gateway': ['gateway', apiPort],
        'other-tenant-gateway': ['gateway', UNDECLARED_PORT],
      }
      const victimAddress = driver.podAddress?.(victim.id)
      if (victimAddress) targets['other-tenant-address'] = [victimAddress, UNDECLARED_PORT]
      for (const [i, address] of hostAddresses().entries()) {
        targets[`api-host-${i}`] = [address, apiPort]
        targets[`other-tenant-host-${i}`] = [address, UNDECLARED_PORT]
      }
      await attack(
        'neighbour-probe',
        { args: probeScript(targets) },
        runningWith('probe-done'),
        (_, log) => {
          for (const name of Object.keys(targets)) {
            expect(log.join('\n'), name).toMatch(new RegExp(`^REFUSED ${name} `, 'm'))
          }
        },
      )
    }, 150_000)

    it('a request to 169.254.169.254 does not reach it', async () => {
      const { execFileSync } = await import('node:child_process')
      // On the loopback interface (this kernel may have no dummy devices): nothing leaves.
      execFileSync('ip', ['addr', 'replace', `${METADATA}/32`, 'dev', 'lo'])
      metadataAdded.done = true
      const metadata = await secretServer(METADATA, 'SECRET-metadata', 80).catch(() =>
        secretServer(METADATA, 'SECRET-metadata'),
      )
      servers.push(metadata.server)
      const targets: Record<string, [string, number]> = { metadata: [METADATA, metadata.port] }
      await attack(
        'metadata',
        { args: probeScript(targets) },
        runningWith('probe-done'),
        (_, log) => expect(log.join('\n')).toMatch(/^REFUSED metadata /m),
      )
    }, 150_000)
  })
}
