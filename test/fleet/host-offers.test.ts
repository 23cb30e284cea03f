import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { Fleet, Host } from '../../src/domain/catalog/fleet.js'
import { HostBoard } from '../../src/domain/hosts/host-board.js'
import type { HostFacts, HostStateRecord } from '../../src/domain/hosts/host-state.js'
import { AllocationLedger } from '../../src/store/allocation-ledger.js'
import { KyselyHostStateRepo } from '../../src/store/host-state-repo.js'
import type { Store } from '../../src/store/open-store.js'
import { testStores } from '../support/stores.js'

/**
 * The host board's offers (docs/fleet.md, "Declared and reported") as placement's capacity
 * index sees them, on a real store: an engine's report lowers a host's offer, the index is
 * built again over it, and a probe that reports the same again keeps the very same hosts (so
 * the index is not rebuilt at every probe).
 */
const declared: Host = {
  id: 'gpu-node-1',
  dataCenterId: 'EU-RO-1',
  cloud: 'SECURE',
  gpu: { typeId: 'NVIDIA L4', count: 2, cudaVersion: null },
  vcpus: 16,
  memoryGb: 64,
  diskGb: 500,
  driver: 'docker',
  cpuFlavors: [],
  simulated: false,
  docker: { url: 'unix:///var/run/docker.sock' },
}

const fleet = {
  dataCenters: [],
  hosts: [declared],
  prices: { gpus: {}, cpus: {} },
  localHost: false,
} as unknown as Fleet

const T0 = '2026-01-01T00:00:00.000Z'

function probed(facts: HostFacts, at = T0): Omit<HostStateRecord, 'schedule'> {
  return {
    hostId: declared.id,
    state: 'UP',
    reason: null,
    since: T0,
    checkedAt: at,
    facts,
    warnings: [],
  }
}

const noLock = async () => {}

describe.each(testStores())('host offers on $name', ({ open }) => {
  let store: Store

  beforeEach(async () => {
    store = await open()
  })

  afterEach(async () => {
    await store.close()
  })

  it("lowers the capacity index to the engine's report, and keeps it while that holds", async () => {
    const board = new HostBoard(fleet, new KyselyHostStateRepo(store.db), () => T0)
    await board.refresh()
    const ledger = new AllocationLedger(store.db, () => board.offeredHosts())
    const free = () =>
      ledger.exclusive(noLock, async (_, allocations) => allocations.index.free(declared.id)!)

    // Not probed yet: as declared.
    expect(board.offeredHosts()).toEqual([declared])
    expect(await free()).toMatchObject({ gpus: 2, vcpus: 16 })

    const noToolkit: HostFacts = {
      name: 'gpu-node-1',
      cpus: 4,
      memoryGb: 62.5,
      serverVersion: '27.0.0',
      runtimes: ['runc'],
    }
    await board.saveProbes([probed(noToolkit)])
    const offered = board.offeredHosts()
    expect(offered[0]).toMatchObject({ gpu: null, vcpus: 4, memoryGb: 64 })
    expect(board.offered(declared.id)).toBe(offered[0])
    expect(await free()).toMatchObject({ gpus: 0, gpuIndices: [], vcpus: 4 })
    expect(ledger.rebuilds).toBe(2)

    // The same report again, later: the same hosts, no rebuild.
    await board.saveProbes([probed(noToolkit, '2026-01-01T00:00:05.000Z')])
    await board.refresh()
    expect(board.offeredHosts()).toBe(offered)
    await free()
    expect(ledger.rebuilds).toBe(2)

    // The toolkit installed and both GPUs read: offered again.
    await board.saveProbes([
      probed({
        ...noToolkit,
        runtimes: ['nvidia', 'runc'],
        gpus: [0, 1].map((index) => ({
          index,
          uuid: `GPU-${index}`,
          name: 'NVIDIA L4',
          typeId: 'NVIDIA L4',
          memoryMib: 23034,
          driverVersion: '550.54.15',
        })),
        cudaVersion: '12.4',
      }),
    ])
    expect(board.offeredHosts()[0]!.gpu).toEqual({
      typeId: 'NVIDIA L4',
      count: 2,
      cudaVersion: '12.4',
    })
    expect(await free()).toMatchObject({ gpus: 2, gpuIndices: [0, 1], vcpus: 4 })
    expect(ledger.rebuilds).toBe(3)
  })
})
