import { spawnSync } from 'node:child_process'
import { DockerDriver } from '../../src/runtime/docker/docker-driver.js'
import type { RuntimeDriver } from '../../src/runtime/driver.js'
import { probeBubblewrap } from '../../src/runtime/process/bubblewrap.js'
import { ProcessDriver } from '../../src/runtime/process/process-driver.js'
import { DEFAULT_SANDBOX_UID_BASE } from '../../src/runtime/process/sandbox-users.js'

export interface RuntimeDriverFactory {
  name: string
  /** A driver keeping its state under stateDir; two drivers on one stateDir see the same. */
  create(stateDir: string): RuntimeDriver
  /** Why the GPU case cannot run with this driver here; undefined when it can. */
  gpuSkipReason?: string
}

/** The image references the conformance suite uses; every driver must give them this meaning. */
export const CONFORMANCE_IMAGES = {
  /** No default command: a workload without a command runs the driver's idle process. */
  plain: 'podyard-conformance/plain:1',
  /** Default command: prints HELLO_IMAGE_LINE, then idles until stopped. */
  hello: 'podyard-conformance/hello:1',
} as const

export const HELLO_IMAGE_LINE = 'hello from the image'

/** Faster than the default so that log tests wait less; the behaviour is the same. */
const LOG_POLL_MS = 50

const processImages = {
  [CONFORMANCE_IMAGES.hello]: `echo '${HELLO_IMAGE_LINE}'; exec sleep infinity`,
}

/**
 * Whether bubblewrap runs here (installed, namespaces allowed, setpriv for root), checked the
 * way the process driver checks it. Without it the sandboxed variant is left out, not failed.
 */
const bubblewrap = await probeBubblewrap({
  searchPath: process.env.PATH,
  probeUid: DEFAULT_SANDBOX_UID_BASE,
})

/** Every driver the conformance suite runs against on this machine. */
export function runtimeDrivers(): RuntimeDriverFactory[] {
  const drivers: RuntimeDriverFactory[] = [
    {
      name: 'process',
      create: (stateDir) =>
        new ProcessDriver({
          stateDir,
          images: processImages,
          sandbox: 'none',
          logPollMs: LOG_POLL_MS,
        }),
    },
  ]
  if (bubblewrap.ok) {
    drivers.push({
      name: 'process (bubblewrap)',
      create: (stateDir) =>
        new ProcessDriver({
          stateDir,
          images: processImages,
          sandbox: 'bubblewrap',
          logPollMs: LOG_POLL_MS,
        }),
    })
  } else {
    console.log(`runtime conformance: process (bubblewrap) left out: ${bubblewrap.reason}`)
  }
  if (process.env.PODYARD_TEST_DOCKER === '1') {
    // Needs the conformance images (test/support/docker-test-images.sh). One server id per test
    // process: a successor driver must see its predecessor's containers.
    const serverId = `conformance-${process.pid}`
    const gpuSkipReason = dockerHasNvidiaRuntime()
      ? undefined
      : 'the Docker engine has no NVIDIA runtime (docker info lists no "nvidia" runtime)'
    drivers.push({
      name: 'docker',
      create: () =>
        new DockerDriver({ serverId, socketPath: process.env.PODYARD_TEST_DOCKER_SOCKET }),
      ...(gpuSkipReason ? { gpuSkipReason } : {}),
    })
  } else {
    console.log('runtime conformance: docker driver left out: set PODYARD_TEST_DOCKER=1')
  }
  return drivers
}

/** Whether the engine can honour GPU device requests (the NVIDIA container runtime). */
function dockerHasNvidiaRuntime(): boolean {
  const probe = spawnSync('docker', ['info', '--format', '{{json .Runtimes}}'], {
    encoding: 'utf8',
    timeout: 10_000,
  })
  return probe.status === 0 && /"nvidia"/.test(probe.stdout)
}
