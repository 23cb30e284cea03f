import { execFileSync } from 'node:child_process'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { startFakeRegistry, type FakeRegistry } from '../../../test/support/fake-registry.js'
import { PublishedPortTakenError, type LogLine, type WorkloadSpec } from '../driver.js'
import { containerName } from './container-spec.js'
import { DockerDriver } from './docker-driver.js'

/**
 * What only the docker driver has, beyond the conformance suite: following and adoption in
 * Docker's terms, isolation from other servers' containers, pulls from a registry, named
 * volumes and per-account networks. Needs a Docker engine and the conformance images
 * (test/support/docker-test-images.sh); skipped without PODYARD_TEST_DOCKER=1.
 */
const enabled = process.env.PODYARD_TEST_DOCKER === '1'
if (!enabled) console.log('docker driver tests skipped: set PODYARD_TEST_DOCKER=1 (needs dockerd)')

const IMAGE = 'podyard-conformance/plain:1'

describe.skipIf(!enabled)('DockerDriver against a Docker engine', () => {
  const serverId = `unit-${process.pid}`
  const drivers: DockerDriver[] = []
  const ids: string[] = []
  let counter = 0

  function open(id = serverId, formerIds: string[] = []): DockerDriver {
    const driver = new DockerDriver({
      serverId: id,
      ...(formerIds.length > 0 ? { formerServerIds: () => Promise.resolve(formerIds) } : {}),
    })
    drivers.push(driver)
    return driver
  }

  function makeSpec(command: string): WorkloadSpec {
    const id = `dd-${process.pid}-${++counter}`
    ids.push(id)
    return {
      id,
      image: IMAGE,
      command,
      env: {},
      containerDiskPath: '/nonexistent',
      diskGb: 1,
      mounts: [],
      ports: [],
      gpuIndices: [],
      vcpus: 1,
      memoryGb: 1,
      labels: { test: 'docker-driver' },
    }
  }

  afterEach(async () => {
    for (const driver of drivers.splice(0)) {
      for (const id of ids) await driver.remove(id)
      await driver.close()
    }
    ids.length = 0
  })

  async function waitFor<T>(probe: () => Promise<T | undefined>): Promise<T> {
    for (let i = 0; i < 400; i++) {
      const value = await probe()
      if (value !== undefined) return value
      await sleep(25)
    }
    throw new Error('timed out')
  }

  it('follows lines as they are written and stops promptly when aborted', async () => {
    const driver = open()
    const spec = makeSpec('echo before; sleep 1; echo after-1; echo after-2; exec sleep 300')
    await driver.start(spec)
    const abort = new AbortController()
    const follow = driver.followLogs(spec.id, 0, abort.signal)[Symbol.asyncIterator]()
    const seen: LogLine[] = []
    for (let i = 0; i < 3; i++) seen.push((await follow.next()).value as LogLine)
    expect(seen.map((l) => [l.seq, l.line])).toEqual([
      [1, 'before'],
      [2, 'after-1'],
      [3, 'after-2'],
    ])
    abort.abort()
    const began = Date.now()
    expect((await follow.next()).done).toBe(true)
    expect(Date.now() - began).toBeLessThan(2000)
  })

  it('keeps its log numbers for a new driver after Docker deleted the oldest lines', async () => {
    // What the store's table keeps for the drivers (store/container-log-numbers-repo.ts).
    const kept = new Map<string, string>()
    const logNumbers = {
      read: async (id: string) => kept.get(id),
      write: async (id: string, numbers: string) => void kept.set(id, numbers),
      remove: async (id: string) => void kept.delete(id),
    }
    const open1MiB = () => {
      const driver = new DockerDriver({ serverId, logMaxBytes: 1024 * 1024, logNumbers })
      drivers.push(driver)
      return driver
    }
    // Numbered lines of about 500 bytes: 1500 of them, and 1000 more once /tmp/go exists.
    const spec = makeSpec(
      [
        "pad=$(printf '%460s' | tr ' ' x); i=0",
        'while [ $i -lt 1500 ]; do i=$((i+1)); echo "$i $pad"; done',
        'while [ ! -e /tmp/go ]; do sleep 0.1; done',
        'while [ $i -lt 2500 ]; do i=$((i+1)); echo "$i $pad"; done',
        'exec sleep 300',
      ].join('\n'),
    )
    const lastNumberIs = (driver: DockerDriver, n: number) =>
      waitFor(async () => {
        const lines = await driver.readLogs(spec.id)
        return lines.at(-1)?.line.startsWith(`${n} `) ? lines : undefined
      })
    const first = open1MiB()
    await first.start(spec)
    const seen = await lastNumberIs(first, 1500)
    expect(seen.every((l) => l.seq === Number(l.line.split(' ')[0]))).toBe(true)
    await first.close()

    // Docker deletes its older file (the first ~970 lines) while no driver reads.
    const container = containerName(serverId, spec.id)
    execFileSync('docker', ['exec', container, 'touch', '/tmp/go'])
    // The new driver's first read comes after the rotation.
    await waitFor(async () => {
      const tail = execFileSync('docker', ['logs', '--tail', '1', container], { encoding: 'utf8' })
      return tail.startsWith('2500 ') ? true : undefined
    })
    const [note, ...lines] = await lastNumberIs(open1MiB(), 2500)
    const oldest = Number(lines[0]!.line.split(' ')[0])
    expect(oldest).toBeGreaterThan(1)
    expect(note).toMatchObject({
      seq: oldest - 1,
      line: expect.stringMatching(
        new RegExp(`^\\[podyard\\] ${oldest - 1} log lines were lost here`),
      ),
    })
    expect(lines.every((l) => l.seq === Number(l.line.split(' ')[0]))).toBe(true)
  })

  it('lets a new driver adopt a workload: same state, same log numbers, exit code', async () => {
    const first = open()
    const spec = makeSpec('echo from-a; sleep 1; echo from-b; exit 7')
    const started = await first.start(spec)
    await first.close()
    const successor = open()
    expect(await successor.inspect(spec.id)).toEqual(started)
    const state = await waitFor(async () => {
      const s = await successor.inspect(spec.id)
      return s?.phase === 'exited' ? s : undefined
    })
    expect(state).toMatchObject({ exitCode: 7, startedAt: started.startedAt })
    expect((await successor.readLogs(spec.id)).map((l) => [l.seq, l.line])).toEqual([
      [1, 'from-a'],
      [2, 'from-b'],
    ])
  })

  it("never sees or touches another server's containers", async () => {
    const ours = open()
    const theirs = open(`${serverId}-other`)
    const spec = makeSpec('exec sleep 300')
    await theirs.start(spec)
    expect(await ours.inspect(spec.id)).toBeUndefined()
    expect((await ours.list()).map((s) => s.id)).not.toContain(spec.id)
    await ours.stop(spec.id, { graceMs: 0 })
    await ours.remove(spec.id)
    expect((await theirs.inspect(spec.id))?.phase).toBe('running')
    // And the same id may run for both servers at once.
    await ours.start(spec)
    expect((await ours.inspect(spec.id))?.phase).toBe('running')
  })

  it('says a published port another process holds is taken, as a typed error, leaving nothing', async () => {
    const holder = createServer()
    await new Promise<void>((resolve) => holder.listen(0, '0.0.0.0', resolve))
    const port = (holder.address() as AddressInfo).port
    try {
      const driver = open()
      const spec = {
        ...makeSpec('sleep 30'),
        ports: [{ private: 8080, protocol: 'tcp' as const, public: port }],
      }
      const failure = await driver.start(spec).catch((error: unknown) => error)
      expect(failure).toBeInstanceOf(PublishedPortTakenError)
      expect(await driver.inspect(spec.id)).toBeUndefined()
    } finally {
      holder.close()
    }
  })

  it('fails to start an image that is absent and cannot be pulled, leaving nothing', async () => {
    const driver = open()
    const spec = { ...makeSpec('true'), image: 'podyard-conformance/absent:1' }
    await expect(driver.start(spec)).rejects.toThrow(
      /^could not pull image podyard-conformance\/absent:1: /,
    )
    expect(await driver.inspect(spec.id)).toBeUndefined()
    // The pull's story is the workload's log until a container exists.
    const lines = (await driver.readLogs(spec.id)).map((l) => l.line)
    expect(lines[0]).toBe('pulling image podyard-conformance/absent:1')
    expect(lines.at(-1)).toMatch(/^could not pull image/)
    const followed: string[] = []
    for await (const line of driver.followLogs(spec.id, 0, new AbortController().signal)) {
      followed.push(line.line)
    }
    expect(followed).toEqual(lines)
    await driver.remove(spec.id)
    expect(await driver.readLogs(spec.id)).toEqual([])
  })

  it('keeps the exited container and its log when the pull for a new start fails, numbering on', async () => {
    const driver = open()
    const spec = makeSpec('echo run-1')
    await driver.start(spec)
    await waitFor(async () =>
      (await driver.inspect(spec.id))?.phase === 'exited' ? true : undefined,
    )
    const absent = { ...spec, image: 'podyard-conformance/absent:1' }
    await expect(driver.start(absent)).rejects.toThrow(/^could not pull image/)
    expect((await driver.inspect(spec.id))?.phase).toBe('exited')
    const log = await driver.readLogs(spec.id)
    expect(log.map((l) => l.seq)).toEqual(log.map((_, i) => i + 1))
    expect(log[0]!.line).toBe('run-1')
    expect(log[1]!.line).toBe('pulling image podyard-conformance/absent:1')
    expect(log.at(-1)!.line).toMatch(/^could not pull image/)
    const followed: LogLine[] = []
    for await (const line of driver.followLogs(spec.id, 1, new AbortController().signal)) {
      followed.push(line)
    }
    expect(followed).toEqual(log.slice(1))

    await driver.start({ ...spec, command: 'echo run-2' })
    const next = await waitFor(async () => {
      const read = await driver.readLogs(spec.id, { afterSeq: log.length })
      return read.length > 0 ? read : undefined
    })
    expect(next).toMatchObject([{ seq: log.length + 1, line: 'run-2' }])
  })

  describe('pulling from a registry', () => {
    let registry: FakeRegistry
    beforeAll(async () => {
      registry = await startFakeRegistry({ blobDelayMs: 300 })
    })
    afterAll(async () => {
      await registry.close()
      execFileSync('docker', ['image', 'rm', '-f', registry.image], { stdio: 'ignore' })
    })

    it('pulls with the credentials, shows the progress in the log, then runs the image', async () => {
      const driver = open()
      const spec: WorkloadSpec = {
        ...makeSpec(''),
        command: null,
        image: registry.image,
        registryAuth: { username: registry.username, password: registry.password },
      }
      let pulling = true
      const started = driver.start(spec).finally(() => (pulling = false))
      const seen = new Set<string>()
      while (pulling) {
        for (const line of await driver.readLogs(spec.id)) seen.add(line.line)
        await sleep(20)
      }
      await started
      expect(seen).toContain(`pulling image ${registry.image} with the registry credentials`)
      expect([...seen].some((line) => /: Pulling fs layer$/.test(line))).toBe(true)
      const lines = await waitFor(async () => {
        const read = await driver.readLogs(spec.id)
        return read.some((l) => l.line === 'pulled image ran') ? read : undefined
      })
      // The pull stays the head of the workload's log, numbered before the container's lines,
      // and is kept with the container: a new driver (a server restart) reads the same.
      expect(lines.map((l) => l.seq)).toEqual(lines.map((_, i) => i + 1))
      expect(lines.map((l) => l.line).slice(-2)).toEqual([
        `pulled image ${registry.image}`,
        'pulled image ran',
      ])
      for (const line of [...seen].filter((l) => !l.includes(': Downloading'))) {
        if (/^pull|: Pull/.test(line)) expect(lines.map((l) => l.line)).toContain(line)
      }
      await driver.close()
      const successor = open()
      expect(await successor.readLogs(spec.id)).toEqual(lines)

      // Pulled again for the next start (the image was removed): numbered on after the last run.
      await successor.stop(spec.id, { graceMs: 0 })
      execFileSync('docker', ['image', 'rm', '-f', registry.image], { stdio: 'ignore' })
      await successor.start(spec)
      const again = await waitFor(async () => {
        const read = await successor.readLogs(spec.id, { afterSeq: lines.length })
        return read.some((l) => l.line === 'pulled image ran') ? read : undefined
      })
      expect(again[0]).toMatchObject({
        seq: lines.length + 1,
        line: `pulling image ${registry.image} with the registry credentials`,
      })
      expect(again.map((l) => l.seq)).toEqual(again.map((_, i) => lines.length + i + 1))

      // Present now: the next start does not pull (the registry is not even asked).
      await registry.close()
      await successor.remove(spec.id)
      await successor.start(spec)
      expect((await successor.inspect(spec.id))?.phase).toBe('running')
      expect((await successor.readLogs(spec.id)).map((l) => l.line)).not.toContain(
        `pulling image ${registry.image} with the registry credentials`,
      )
      registry = await startFakeRegistry({ blobDelayMs: 300 })
    })

    it('says the credentials were refused, and never what they were', async () => {
      const driver = open()
      const password = `wrong-${Date.now()}`
      const spec: WorkloadSpec = {
        ...makeSpec(''),
        image: registry.image.replace(':1', ':refused'),
        registryAuth: { username: registry.username, password },
      }
      const error = (await driver.start(spec).catch((e: unknown) => e)) as Error
      expect(error.message).toMatch(
        /^could not pull image .*: the registry refused the pod's registry credentials \(/,
      )
      const log = (await driver.readLogs(spec.id)).map((l) => l.line)
      expect(log[0]).toMatch(/^pulling image .* with the registry credentials$/)
      expect(log.at(-1)).toBe(error.message)
      expect(JSON.stringify(log) + error.message).not.toContain(password)
    })

    it('says the image does not exist', async () => {
      const driver = open()
      const spec: WorkloadSpec = {
        ...makeSpec(''),
        image: registry.image.replace(':1', ':missing'),
        registryAuth: { username: registry.username, password: registry.password },
      }
      await expect(driver.start(spec)).rejects.toThrow(
        /^could not pull image .*:missing: no such image in its registry \(/,
      )
    })
  })

  function volumes(workloadId: string): string[] {
    return execFileSync(
      'docker',
      ['volume', 'ls', '--filter', `label=podyard.workload=${workloadId}`, '--format', '{{.Name}}'],
      { encoding: 'utf8' },
    )
      .split('\n')
      .filter(Boolean)
  }

  it('keeps a persistent mount in a named volume across stop and start; remove deletes it', async () => {
    const driver = open()
    const spec = {
      ...makeSpec('echo "boot" >> /workspace/boots; cat /workspace/boots; exec sleep 300'),
      mounts: [
        { hostPath: '/nonexistent/never-used', containerPath: '/workspace', kind: 'persistent' },
      ],
    } satisfies WorkloadSpec
    await driver.start(spec)
    await waitFor(async () => ((await driver.readLogs(spec.id)).length === 1 ? true : undefined))
    expect(volumes(spec.id)).toEqual([`podyard-${serverId}-${spec.id}-workspace`])
    await driver.stop(spec.id, { graceMs: 1000 })
    await driver.start(spec)
    const lines = await waitFor(async () => {
      const read = await driver.readLogs(spec.id)
      return read.length === 2 ? read : undefined
    })
    expect(lines.map((l) => l.line)).toEqual(['boot', 'boot'])
    await driver.remove(spec.id)
    expect(volumes(spec.id)).toEqual([])
  })

  function containers(workloadId: string): string[] {
    return execFileSync(
      'docker',
      ['ps', '-a', '--filter', `label=podyard.workload=${workloadId}`, '--format', '{{.Names}}'],
      { encoding: 'utf8' },
    )
      .split('\n')
      .filter(Boolean)
      .sort()
  }

  it("adopts a former id's container, and a new start keeps its volume", async () => {
    const formerId = `${serverId}-former`
    const former = open(formerId)
    const spec = {
      ...makeSpec('echo "boot" >> /workspace/boots; cat /workspace/boots; exec sleep 300'),
      mounts: [
        { hostPath: '/nonexistent/never-used', containerPath: '/workspace', kind: 'persistent' },
      ],
    } satisfies WorkloadSpec
    const started = await former.start(spec)
    await waitFor(async () => ((await former.readLogs(spec.id)).length === 1 ? true : undefined))
    // The platform's driver, which knows the former id: that container is its workload.
    const ours = open(serverId, [formerId])
    expect(await ours.inspect(spec.id)).toEqual(started)
    expect((await ours.list()).filter((s) => s.id === spec.id)).toEqual([started])
    await ours.stop(spec.id, { graceMs: 1000 })
    expect((await former.inspect(spec.id))?.phase).toBe('exited')
    // Started again: a container of this server's id, on the volume the workload had (two
    // boots in it), its log numbered on from the former container's.
    await ours.start(spec)
    const lines = await waitFor(async () => {
      const read = await ours.readLogs(spec.id)
      return read.length === 2 ? read : undefined
    })
    expect(lines.map((l) => [l.seq, l.line])).toEqual([
      [2, 'boot'],
      [3, 'boot'],
    ])
    expect(containers(spec.id)).toEqual([containerName(serverId, spec.id)])
    expect(volumes(spec.id)).toEqual([`podyard-${formerId}-${spec.id}-workspace`])
    await ours.remove(spec.id)
    expect(containers(spec.id)).toEqual([])
    expect(volumes(spec.id)).toEqual([])
  })

  it('keeps one container of a workload started under two ids; never touches other servers', async () => {
    const formerId = `${serverId}-former`
    const spec = makeSpec('exec sleep 300')
    await open(formerId).start(spec)
    // Replicas that each had their own id each started it, and another server has one too.
    const newer = await open(serverId).start(spec)
    const theirs = open(`${serverId}-other`)
    await theirs.start(spec)
    // The numbers the store keeps for the older container's log go with it.
    const formerContainer = execFileSync(
      'docker',
      ['inspect', '-f', '{{.Id}}', containerName(formerId, spec.id)],
      { encoding: 'utf8' },
    ).trim()
    const kept = new Map([[formerContainer, '{}']])
    const ours = new DockerDriver({
      serverId,
      formerServerIds: () => Promise.resolve([formerId]),
      logNumbers: {
        read: async (id: string) => kept.get(id),
        write: async (id: string, numbers: string) => void kept.set(id, numbers),
        remove: async (id: string) => void kept.delete(id),
      },
    })
    drivers.push(ours)
    expect((await ours.list()).filter((s) => s.id === spec.id)).toEqual([newer])
    expect([...kept.keys()]).toEqual([])
    expect(containers(spec.id)).toEqual(
      [containerName(serverId, spec.id), containerName(`${serverId}-other`, spec.id)].sort(),
    )
    await ours.remove(spec.id)
    expect(containers(spec.id)).toEqual([containerName(`${serverId}-other`, spec.id)])
    expect((await theirs.inspect(spec.id))?.phase).toBe('running')
  })

  it('lets workloads on one network reach each other by alias, and no one else', async () => {
    const driver = open()
    const serve = (network: string, alias: string): WorkloadSpec => ({
      ...makeSpec(`mkdir /www && echo ${alias} > /www/index.html && exec httpd -f -p 80 -h /www`),
      network: { name: network, aliases: [alias] },
    })
    const a1 = serve('account-a', 'a1.runpod.internal')
    const b1 = serve('account-b', 'b1.runpod.internal')
    // busybox-static's wget crashes in glibc's static name service lookups: nslookup resolves
    // (through Docker's embedded DNS) and nc fetches.
    const fetchFrom = (ip: string): string =>
      `body=$(printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 1 ${ip} 80 | tail -n 1); ` +
      '[ -n "$body" ] && echo "$body" && exit 0; '
    // Retries while the server may still be starting; the isolated probe needs fewer.
    const probe = (network: string, target: string, attempts: number): WorkloadSpec => ({
      ...makeSpec(
        `for i in $(seq ${attempts}); do ` +
          `ip=$(nslookup ${target} 2>/dev/null | awk '/^Address: /{print $2}' | tail -n 1); ` +
          `if [ -n "$ip" ]; then ${fetchFrom('$ip')} fi; sleep 0.2; done; ` +
          'if [ -n "$ip" ]; then echo unreachable; else echo no-name; fi; exit 1',
      ),
      network: { name: network, aliases: [] },
    })
    await driver.start(a1)
    await driver.start(b1)
    const same = probe('account-a', 'a1.runpod.internal', 20)
    const other = probe('account-b', 'a1.runpod.internal', 2)
    await driver.start(same)
    await driver.start(other)
    const exitOf = (id: string) =>
      waitFor(async () => {
        const state = await driver.inspect(id)
        return state?.phase === 'exited' ? state : undefined
      })
    expect((await exitOf(same.id)).exitCode).toBe(0)
    expect((await driver.readLogs(same.id)).map((l) => l.line)).toEqual(['a1.runpod.internal'])
    expect((await exitOf(other.id)).exitCode).toBe(1)
    expect((await driver.readLogs(other.id)).map((l) => l.line)).toEqual(['no-name'])
    // Nor by address: the networks are isolated, not only their names.
    const a1Ip = execFileSync(
      'docker',
      [
        'inspect',
        '--format',
        '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}',
        containerName(serverId, a1.id),
      ],
      { encoding: 'utf8' },
    ).trim()
    expect(a1Ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/)
    const byIp = {
      ...makeSpec(`${fetchFrom(a1Ip)} exit 1`),
      network: { name: 'account-b', aliases: [] },
    }
    await driver.start(byIp)
    expect((await exitOf(byIp.id)).exitCode).toBe(1)

    // A network goes with the last workload on it.
    for (const spec of [a1, same]) await driver.remove(spec.id)
    const networks = execFileSync('docker', ['network', 'ls', '--format', '{{.Name}}'], {
      encoding: 'utf8',
    })
    expect(networks).not.toContain(`podyard-${serverId}-account-a`)
    expect(networks).toContain(`podyard-${serverId}-account-b`)
  })

  it('makes one network of two workloads started on it at once', async () => {
    const driver = open()
    const specs = [1, 2].map(() => ({
      ...makeSpec('exec sleep 100000'),
      network: { name: 'account-c', aliases: [] },
    }))
    // Each start made the network: two of one name, which the next start could not join.
    await Promise.all(specs.map((spec) => driver.start(spec)))
    const named = () =>
      execFileSync(
        'docker',
        ['network', 'ls', '--filter', `label=podyard.server=${serverId}`, '--format', '{{.Name}}'],
        { encoding: 'utf8' },
      )
        .split('\n')
        .filter((name) => name === `podyard-${serverId}-account-c`)
    expect(named()).toHaveLength(1)
    const third = { ...makeSpec('exec sleep 100000'), network: { name: 'account-c', aliases: [] } }
    expect((await driver.start(third)).phase).toBe('running')
    for (const spec of [...specs, third]) await driver.remove(spec.id)
    expect(named()).toEqual([])
  })
})
