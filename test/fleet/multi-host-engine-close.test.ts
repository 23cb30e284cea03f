import { execFileSync } from 'node:child_process'
import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DockerDriver } from '../../src/runtime/docker/docker-driver.js'
import { dockerConnectionOf } from '../../src/runtime/docker/docker-endpoint.js'
import { SshEngineAgent } from '../../src/runtime/docker/engine-agents.js'
import {
  holdRig,
  multiHostEnabled,
  readRigLayout,
  rigHost,
  rigUnavailableReason,
  type RigLayout,
} from '../support/multi-host-rig.js'

/**
 * A remote engine let go (its host removed at runtime) leaves no connection behind, on the
 * multi-host rig's real engines: over SSH, a request in flight (an event stream) holds one SSH
 * connection, gone from the machine's sockets once the driver is closed; over TLS likewise.
 * Opt-in with PODYARD_TEST_MULTIHOST=1.
 */
const enabled = multiHostEnabled()

/** Established TCP connections from this machine to address:port (ss, iproute2). */
function connectionsTo(address: string, port: number): number {
  const out = execFileSync('ss', ['-Htn', 'state', 'established', 'dst', `${address}:${port}`], {
    encoding: 'utf8',
  })
  return out.split('\n').filter((line) => line.trim() !== '').length
}

async function until(what: string, done: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`still not ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

describe.runIf(enabled)('remote engines closed as their host goes', () => {
  let layout: RigLayout
  let release: (() => void) | undefined

  beforeAll(async () => {
    release = await holdRig()
    const reason = await rigUnavailableReason()
    if (reason) throw new Error(`PODYARD_TEST_MULTIHOST=1 but the rig is not usable: ${reason}`)
    layout = readRigLayout()
  }, 960_000)

  afterAll(() => release?.())

  for (const name of ['gpu-node-2', 'gpu-node-3']) {
    it(`${name}: a request in flight holds a connection; close() ends it`, async () => {
      const host = rigHost(layout, name)
      const port = host.transport === 'ssh' ? 22 : 2376
      const before = connectionsTo(host.address, port)
      const options = dockerConnectionOf({
        url: host.dockerUrl,
        ...(host.transport === 'ssh'
          ? { sshKey: layout.ssh.privateKeyFile, knownHosts: layout.ssh.knownHostsFile }
          : {
              tls: { ca: layout.tls.caFile, cert: layout.tls.certFile, key: layout.tls.keyFile },
            }),
      })
      const driver = new DockerDriver({
        serverId: 'engine-close-rig',
        connection: { options, where: host.dockerUrl },
      })
      await driver.ping()
      // A stream that stays open until it is cut: the engine's events, on the driver's agent.
      const events = await new Docker(options).getEvents()
      events.on('error', () => undefined)
      await until('connected', () => connectionsTo(host.address, port) > before)
      if (options.agent instanceof SshEngineAgent) expect(options.agent.openConnections).toBe(1)

      await driver.close()
      await until('closed', () => connectionsTo(host.address, port) === before)
      if (options.agent instanceof SshEngineAgent) expect(options.agent.openConnections).toBe(0)
    }, 60_000)
  }
})
