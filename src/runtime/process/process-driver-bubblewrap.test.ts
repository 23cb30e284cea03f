import { copyFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import type { WorkloadSpec } from '../driver.js'
import { probeBubblewrap } from './bubblewrap.js'
import type { ProcessDriver } from './process-driver.js'
import { DEFAULT_SANDBOX_UID_BASE } from './sandbox-users.js'
import { groupMembers } from './process-group.js'
import {
  driver,
  envOf,
  fileText,
  makeSpec,
  root,
  stateJson,
  useProcessDriverRoot,
  waitFor,
} from '../../../test/support/process-driver-fixtures.js'

/**
 * The process driver's sandboxes: 'auto' without bwrap, and workloads in bubblewrap (what they
 * see of their disks and of the host, a stop as they start, a user of their own per tenant),
 * where bwrap works on this machine. Without a sandbox: process-driver.test.ts.
 */

useProcessDriverRoot()

const bubblewrapWorks = (
  await probeBubblewrap({ searchPath: process.env.PATH, probeUid: DEFAULT_SANDBOX_UID_BASE })
).ok

describe('ProcessDriver', () => {
  it("falls back to no sandbox in 'auto' without bwrap, and refuses to start in 'bubblewrap'", async () => {
    const savedPath = process.env.PATH
    process.env.PATH = path.join(root, 'empty-bin')
    try {
      expect(await driver({ sandbox: 'auto' }).activeSandbox()).toBe('none')
      await expect(driver({ sandbox: 'bubblewrap' }).start(makeSpec())).rejects.toThrow(/bwrap/)
    } finally {
      process.env.PATH = savedPath
    }
  })

  describe.runIf(bubblewrapWorks)('in bubblewrap', () => {
    it('sees its disk at /root, its mounts at their paths, a read-only system and its own pids', async () => {
      const d = driver({ sandbox: 'bubblewrap' })
      expect(await d.activeSandbox()).toBe('bubblewrap')
      const volume = path.join(root, 'volumes', 'v1')
      const spec = makeSpec({
        command: [
          'env > env.txt',
          'pwd > pwd.txt',
          'ls /proc | grep -c "^[0-9]" > pids.txt',
          'if touch /usr/podyard-probe 2>/dev/null; then echo writable; else echo read-only; fi > usr.txt',
          'echo from-sandbox > /workspace/written.txt',
          'touch ready',
          'exec sleep 300',
        ].join('; '),
        mounts: [{ hostPath: volume, containerPath: '/workspace', kind: 'persistent' }],
      })
      await d.start(spec)
      await fileText(path.join(spec.containerDiskPath, 'ready'))
      const read = (name: string): string =>
        readFileSync(path.join(spec.containerDiskPath, name), 'utf8').trim()
      expect(read('pwd.txt')).toBe('/root')
      expect(read('usr.txt')).toBe('read-only')
      expect(Number(read('pids.txt'))).toBeLessThan(10)
      expect(readFileSync(path.join(volume, 'written.txt'), 'utf8')).toBe('from-sandbox\n')
      expect(envOf(read('env.txt'))).toMatchObject({
        HOME: '/root',
        PODYARD_CONTAINER_DISK: '/root',
        PODYARD_MOUNT_WORKSPACE: '/workspace',
      })
      expect(stateJson(spec.id).sandbox).toBe('bubblewrap')
    })

    it('runs a Node.js outside the system directories (nvm, the npm node package) at its path', async () => {
      const node = path.join(root, 'runtime', 'bin', 'node')
      mkdirSync(path.dirname(node), { recursive: true })
      copyFileSync(process.execPath, node)
      const images = {
        'test/node': `exec '${node}' -e 'console.log("ran " + process.version)'`,
      }
      const ran = async (d: ProcessDriver) => {
        const spec = makeSpec({ command: null, image: 'test/node' })
        await d.start(spec)
        const state = await waitFor('the exit', async () => {
          const s = await d.inspect(spec.id)
          return s?.phase === 'exited' ? s : undefined
        })
        return { exitCode: state.exitCode, lines: (await d.readLogs(spec.id)).map((l) => l.line) }
      }
      // The sandbox shows only the system directories: the shell does not find that node.
      expect(await ran(driver({ sandbox: 'bubblewrap', images }))).toMatchObject({ exitCode: 127 })
      const shown = driver({ sandbox: 'bubblewrap', images, hostExecutables: [node] })
      expect(await ran(shown)).toEqual({ exitCode: 0, lines: [`ran ${process.version}`] })
    })

    it('shows none of the host: no secrets of /etc, no home, no server process', async () => {
      const d = driver({ sandbox: 'bubblewrap' })
      const planted = path.join(root, 'planted-secret.txt')
      writeFileSync(planted, 'host-secret-0123\n', { mode: 0o644 })
      process.env.PODYARD_DRIVER_TEST_SECRET = 'server-env-secret-0123'
      try {
        const spec = makeSpec({
          command: [
            `for f in /etc/shadow /etc/gshadow /etc/sudoers /etc/ssh ${planted} /proc/${process.pid}/environ /home /var/lib; do`,
            '  if [ -e "$f" ]; then echo "SEEN $f"; else echo "ABSENT $f"; fi',
            'done > seen.txt',
            `kill -0 ${process.pid} 2>/dev/null && echo SIGNALLED >> seen.txt`,
            'cat /proc/1/environ 2>/dev/null | tr "\\0" "\\n" >> seen.txt',
            'hostname > hostname.txt',
            'touch ready',
            'exec sleep 300',
          ].join('\n'),
        })
        await d.start(spec)
        await fileText(path.join(spec.containerDiskPath, 'ready'))
        const seen = readFileSync(path.join(spec.containerDiskPath, 'seen.txt'), 'utf8')
        expect(seen).not.toMatch(/SEEN|SIGNALLED|server-env-secret/)
        expect(readFileSync(path.join(spec.containerDiskPath, 'hostname.txt'), 'utf8')).toBe(
          `${spec.id}\n`,
        )
      } finally {
        delete process.env.PODYARD_DRIVER_TEST_SECRET
      }
    })

    // Its rounds take a fraction of a second, but once took over 30 s beside the Docker suites on
    // this two-core machine: the test allows two minutes; a stop that waited out its grace would
    // take ten.
    it(
      'stops a workload stopped as it starts: what its sandbox starts late hears SIGTERM, nothing is left',
      {
        timeout: 120_000,
      },
      async () => {
        // bwrap's init in the workload's pid namespace ignores SIGTERM (the kernel's rule for a
        // namespace's init), and starts the command a moment after the launch: a stop in that
        // moment returned with the init and the command left running for ever, or (when it saw
        // the init) waited out the whole grace for a command that never heard the signal.
        const d = driver({ sandbox: 'bubblewrap' })
        // Before the fix, about every other round left processes behind.
        for (let round = 0; round < 10; round++) {
          const spec = makeSpec()
          await d.start(spec)
          const saved = stateJson(spec.id)
          // A grace longer than the test's timeout: only SIGTERM can end this stop in time.
          await d.stop(spec.id, { graceMs: 600_000 })
          const group = {
            pgid: Number(saved.pgid),
            leaderStartTicks: Number(saved.processStartTicks),
          }
          expect(await groupMembers(group), `round ${round}`).toEqual([])
        }
      },
    )

    it.runIf(process.getuid?.() === 0)(
      'started by root, runs each tenant as its own unprivileged user, owning its directories',
      async () => {
        const d = driver({ sandbox: 'bubblewrap' })
        const volume = path.join(root, 'volumes', 'shared')
        mkdirSync(path.join(volume, 'old'), { recursive: true })
        writeFileSync(path.join(volume, 'old', 'from-root.txt'), 'x')
        const probe = [
          'id -u > uid.txt',
          'grep CapEff /proc/self/status > caps.txt',
          'echo ok > /workspace/old/from-root.txt',
          'touch ready',
          'exec sleep 300',
        ].join('; ')
        const mount = { hostPath: volume, containerPath: '/workspace', kind: 'network' } as const
        const a1 = makeSpec({ command: probe, tenant: 'account-a', mounts: [mount] })
        const b = makeSpec({ command: probe, tenant: 'account-b' })
        const a2 = makeSpec({ command: probe, tenant: 'account-a' })
        for (const spec of [a1, b, a2]) {
          await d.start(spec)
          await fileText(path.join(spec.containerDiskPath, 'ready'))
        }
        const uid = (spec: WorkloadSpec) =>
          Number(readFileSync(path.join(spec.containerDiskPath, 'uid.txt'), 'utf8'))
        expect(uid(a1)).toBeGreaterThanOrEqual(1_900_000_001)
        expect(uid(a2)).toBe(uid(a1))
        expect(uid(b)).not.toBe(uid(a1))
        expect(stateJson(a1.id).user).toEqual({ uid: uid(a1), gid: uid(a1) })
        expect(readFileSync(path.join(a1.containerDiskPath, 'caps.txt'), 'utf8')).toMatch(
          /CapEff:\s+0+\n/,
        )
        // Its volume, with what root left in it, is its tenant's now; its disk is its alone.
        expect(readFileSync(path.join(volume, 'old', 'from-root.txt'), 'utf8')).toBe('ok\n')
        expect(statSync(path.join(volume, 'old')).uid).toBe(uid(a1))
        expect(statSync(a1.containerDiskPath).mode & 0o777).toBe(0o700)
        // A new driver (a restarted server) gives a tenant the uid it had.
        const successor = driver({ sandbox: 'bubblewrap' })
        const a3 = makeSpec({ command: probe, tenant: 'account-a' })
        await successor.start(a3)
        await fileText(path.join(a3.containerDiskPath, 'ready'))
        expect(uid(a3)).toBe(uid(a1))
      },
    )
  })
})
