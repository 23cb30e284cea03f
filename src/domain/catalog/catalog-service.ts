import {
  availableGpuCounts,
  cpuAvailability,
  eligibleCpuHosts,
  gpuAvailability,
  withdrawnGpuAllocations,
  type Allocation,
  type Availability,
  type GpuStockQuery,
} from './capacity.js'
import {
  CPU_FLAVORS,
  largestVcpuCount,
  MIN_VCPU_COUNT,
  vcpuCountsUpTo,
  type CpuFlavor,
} from './cpu-flavors.js'
import type { Cloud, DataCenter, Fleet, Host } from './fleet.js'
import { compareCudaVersions, GPU_TYPES, type GpuManufacturer, type GpuType } from './gpu-types.js'
import { hostOpenTo } from './placement-constraints.js'
import type { AllocationRepo } from './ports.js'

export interface NamedAvailability {
  id: string
  name: string
  availability: Availability
}

/** Wire-compat §3.3 GpuType. */
export interface GpuTypeView {
  id: string
  name: string
  pool: string | null
  manufacturer: GpuManufacturer
  /** GB */
  memory: number
  secure: boolean
  community: boolean
  /**
   * USD/hour per GPU: the list price of each cloud, given even where a cloud has no host of the
   * type (RunPod's v2 schema requires both numbers; `secure`/`community` say what is offered).
   * `serverless` is left out when no serverless pool offers the type.
   */
  price: { secure: number; community: number; serverless?: number }
  maxCount: { secure: number; community: number }
  availability: Availability
  dataCenters?: NamedAvailability[]
  cudaVersions?: Array<{ version: string; available: boolean }>
}

/** Wire-compat §3.3 CpuType, plus `vcpuCounts`. */
export interface CpuTypeView {
  id: string
  name: string
  group: string
  vcpu: { min: number; max: number }
  /** Our extension: every vcpuCount one host can hold, so clients need not compute them. */
  vcpuCounts: number[]
  ramGbPerVcpu: number
  price: { securePerVcpu: number; serverlessPerVcpu: number }
  availability: Availability
  dataCenters?: NamedAvailability[]
}

/** Wire-compat §3.3 DataCenter. */
export interface DataCenterView {
  id: string
  name: string
  region: string
  countryCode?: string
  globalNetwork: boolean
  networkVolumeTypes: string[]
  compliance: string[]
  gpuAvailability?: NamedAvailability[]
  cpuAvailability?: NamedAvailability[]
}

export interface GpuQuery {
  /** GPUs one pod wants; default 1. */
  count?: number | undefined
  cloud?: Cloud | undefined
  cudaVersions?: string[] | undefined
  minCudaVersion?: string | undefined
  /**
   * Only data centers in these countries count: for availability, `dataCenters` and
   * `cudaVersions`; a list leaves out the types with none there.
   */
  countryCodes?: string[] | undefined
  /** Adds `dataCenters` and `cudaVersions`. */
  detail?: boolean | undefined
}

export interface CpuQuery {
  /** vCPUs one pod wants; default MIN_VCPU_COUNT. */
  vcpuCount?: number | undefined
  /** Adds `dataCenters`. */
  detail?: boolean | undefined
}

export interface DataCenterQuery {
  globalNetwork?: boolean | undefined
  /** Any of these regions. */
  regions?: string[] | undefined
  /** Offering all of these volume types. */
  networkVolumeTypes?: string[] | undefined
  /** Holding all of these certifications. */
  compliance?: string[] | undefined
  /** In any of these countries. */
  countryCodes?: string[] | undefined
  gpuDetail?: boolean | undefined
  cpuDetail?: boolean | undefined
}

export interface FleetSnapshot {
  hosts: Host[]
  allocations: Allocation[]
  /** Hosts that take no new pods now, each with why (PlacementSnapshot.unavailable). */
  unavailable: Record<string, string>
}

const DEFAULT_GPU_COUNT = 1

/**
 * Whose stock a catalog read counts: an account sees the free capacity of the hosts open to it
 * (hosts in no pool, and those of the pools it is bound to), as placement would give it;
 * `accountId: null` is a caller without a key, an account bound to no pool. A read without a
 * viewer counts every host: the platform's own view.
 */
export interface StockViewer {
  accountId: string | null
}

/**
 * Read side of the fleet: GPU types, CPU flavors and data centers with prices and live stock.
 *
 * Only GPU types some host of the fleet has are listed, not the whole RunPod table: a type no
 * host has can never be rented here, and listing it would invite requests that must fail.
 * Likewise only CPU flavors some host offers. Unknown ids give undefined, never an error;
 * query values are validated by the API before they get here.
 */
export class CatalogService {
  /**
   * @param unavailable hosts that take no new pods now (DOWN, cordoned, draining: the host
   *   board), each with why; they offer no stock
   * @param offeredHosts the fleet's hosts as they offer themselves: the declaration lowered to
   *   what each host reported (the host board); stock and placement count these
   */
  constructor(
    private readonly fleetDefinition: Fleet,
    private readonly allocations: AllocationRepo,
    readonly unavailable: () => Record<string, string> = () => ({}),
    private readonly offeredHosts: () => readonly Host[] = () => fleetDefinition.hosts,
    readonly withdrawnGpus: () => Readonly<Record<string, readonly number[]>> = () => ({}),
    private readonly accountPools: (accountId: string) => Promise<readonly string[]> = () =>
      Promise.resolve([]),
  ) {}

  /** The allocations, and the GPUs withdrawn for their health as allocations of their own. */
  private async holdings(): Promise<Allocation[]> {
    const withdrawn = withdrawnGpuAllocations(this.withdrawnGpus())
    const held = await this.allocations.list()
    return withdrawn.length > 0 ? [...held, ...withdrawn] : held
  }

  /** fleetCpuFlavors() and the fleet's GPU type ids, for the fleet's hosts of `offersFor`. */
  private offers: { cpu: Array<{ flavor: CpuFlavor; max: number }>; gpu: Set<string> } | undefined
  /** Another array: hosts were added or removed at runtime, the offers are computed again. */
  private offersFor: readonly Host[] | undefined

  get fleet(): Fleet {
    return this.fleetDefinition
  }

  private get offered(): { cpu: Array<{ flavor: CpuFlavor; max: number }>; gpu: Set<string> } {
    if (this.offersFor !== this.fleetDefinition.hosts) this.offers = undefined
    this.offersFor = this.fleetDefinition.hosts
    this.offers ??= {
      cpu: this.computeFleetCpuFlavors(),
      gpu: new Set(this.fleetDefinition.hosts.flatMap((h) => (h.gpu ? [h.gpu.typeId] : []))),
    }
    return this.offers
  }

  /** Whether some host of the fleet has the GPU type; unlike getGpuType, no stock is computed. */
  offersGpuType(id: string): boolean {
    return this.offered.gpu.has(id)
  }

  /**
   * The CPU flavor as the fleet offers it, with every vCPU count one host can hold; unlike
   * getCpuType, no stock is computed (a pod create checks its request with it).
   */
  cpuFlavorOffer(id: string): { flavor: CpuFlavor; vcpuCounts: number[] } | undefined {
    const found = this.offered.cpu.find(({ flavor }) => flavor.id === id)
    return found && { flavor: found.flavor, vcpuCounts: vcpuCountsUpTo(found.max) }
  }

  /**
   * The hosts placement chooses from: as they offer themselves, what their engines reported
   * (the same array while that does not change).
   */
  hosts(): readonly Host[] {
    return this.offeredHosts()
  }

  // A pod's answer names its host's share: a scan of 10 000 hosts per read cost more than the
  // read (bench/README.md). Rebuilt when the offered hosts are another array (a host's offer
  // changed, or the fleet was reloaded).
  private hostsIndexed: readonly Host[] | undefined
  private hostIndex = new Map<string, Host>()

  /** The host of this id as it offers itself (hosts()), from a map by id. */
  host(id: string): Host | undefined {
    const hosts = this.offeredHosts()
    if (this.hostsIndexed !== hosts) {
      this.hostIndex = new Map(hosts.map((h) => [h.id, h]))
      this.hostsIndexed = hosts
    }
    return this.hostIndex.get(id)
  }

  /** Hosts and what they hold now, for placement decisions. */
  async snapshot(): Promise<FleetSnapshot> {
    return {
      hosts: [...this.offeredHosts()],
      allocations: await this.holdings(),
      unavailable: this.unavailable(),
    }
  }

  /**
   * The hosts whose free capacity is stock: those that take new pods now and, for a viewer,
   * are open to its account.
   */
  async stockHosts(viewer?: StockViewer): Promise<Host[]> {
    const unavailable = this.unavailable()
    const open = this.offeredHosts().filter((h) => unavailable[h.id] === undefined)
    if (viewer === undefined) return open
    const pools = viewer.accountId === null ? [] : await this.accountPools(viewer.accountId)
    return open.filter((h) => hostOpenTo(h, pools))
  }

  /** Stock hosts (for the viewer) and what is held on them now. */
  private async stock(viewer: StockViewer | undefined): Promise<Stock> {
    return { hosts: await this.stockHosts(viewer), allocations: await this.holdings() }
  }

  async listGpuTypes(q: GpuQuery = {}, viewer?: StockViewer): Promise<GpuTypeView[]> {
    const stock = await this.stock(viewer)
    return this.fleetGpuTypes()
      .filter((type) => this.gpuHosts(type.id, undefined, q.countryCodes).length > 0)
      .map((type) => this.gpuTypeView(type, q, stock))
  }

  async getGpuType(
    id: string,
    q: GpuQuery = {},
    viewer?: StockViewer,
  ): Promise<GpuTypeView | undefined> {
    const type = this.fleetGpuTypes().find((t) => t.id === id)
    if (!type) return undefined
    return this.gpuTypeView(type, q, await this.stock(viewer))
  }

  /** GPU counts a pod of the type can get placed with now (see capacity.availableGpuCounts). */
  async availableGpuCounts(typeId: string, cloud?: Cloud, viewer?: StockViewer): Promise<number[]> {
    const { hosts, allocations } = await this.stock(viewer)
    return availableGpuCounts(hosts, allocations, typeId, cloud)
  }

  async listCpuTypes(q: CpuQuery = {}, viewer?: StockViewer): Promise<CpuTypeView[]> {
    const stock = await this.stock(viewer)
    return this.fleetCpuFlavors().map(({ flavor, max }) => this.cpuTypeView(flavor, max, q, stock))
  }

  async getCpuType(
    id: string,
    q: CpuQuery = {},
    viewer?: StockViewer,
  ): Promise<CpuTypeView | undefined> {
    const found = this.fleetCpuFlavors().find(({ flavor }) => flavor.id === id)
    if (!found) return undefined
    return this.cpuTypeView(found.flavor, found.max, q, await this.stock(viewer))
  }

  async listDataCenters(q: DataCenterQuery = {}, viewer?: StockViewer): Promise<DataCenterView[]> {
    const matching = this.fleetDefinition.dataCenters.filter((dc) => matchesDataCenterQuery(dc, q))
    const stock = q.gpuDetail || q.cpuDetail ? await this.stock(viewer) : NO_STOCK
    return matching.map((dc) => this.dataCenterView(dc, q, stock))
  }

  /** The filters of the query do not apply here: an id names one data center. */
  async getDataCenter(
    id: string,
    q: DataCenterQuery = {},
    viewer?: StockViewer,
  ): Promise<DataCenterView | undefined> {
    const dc = this.fleetDefinition.dataCenters.find((d) => d.id === id)
    if (!dc) return undefined
    const stock = q.gpuDetail || q.cpuDetail ? await this.stock(viewer) : NO_STOCK
    return this.dataCenterView(dc, q, stock)
  }

  private gpuHosts(typeId: string, cloud?: Cloud, countryCodes?: string[]): Host[] {
    const inCountries = this.hostsIn(countryCodes)
    return inCountries.filter(
      (h) => h.gpu?.typeId === typeId && (cloud === undefined || h.cloud === cloud),
    )
  }

  /** The hosts of data centers in these countries; every host when none are given. */
  private hostsIn(countryCodes: string[] | undefined): Host[] {
    if (!countryCodes?.length) return this.fleetDefinition.hosts
    const dataCenters = new Set(
      this.fleetDefinition.dataCenters
        .filter((dc) => dc.countryCode !== undefined && countryCodes.includes(dc.countryCode))
        .map((dc) => dc.id),
    )
    return this.fleetDefinition.hosts.filter((h) => dataCenters.has(h.dataCenterId))
  }

  /** In the order of the GPU type table, so lists are stable across restarts. */
  private fleetGpuTypes(): GpuType[] {
    return GPU_TYPES.filter((t) => this.offered.gpu.has(t.id))
  }

  private gpuTypeView(type: GpuType, q: GpuQuery, stock: Stock): GpuTypeView {
    // Stock counts only the hosts in the countries asked for (all of them when none are), of
    // those that take new pods now.
    const inCountries = new Set(this.hostsIn(q.countryCodes).map((h) => h.id))
    const hosts = stock.hosts.filter((h) => inCountries.has(h.id))
    const { allocations } = stock
    const query: GpuStockQuery = {
      typeId: type.id,
      count: q.count ?? DEFAULT_GPU_COUNT,
      cloud: q.cloud,
      cudaVersions: q.cudaVersions,
      minCudaVersion: q.minCudaVersion,
    }
    const maxCount = (cloud: Cloud) =>
      Math.max(0, ...this.gpuHosts(type.id, cloud).map((h) => h.gpu?.count ?? 0))
    const secure = maxCount('SECURE')
    const community = maxCount('COMMUNITY')
    const price = this.fleetDefinition.prices.gpus[type.id]
    const view: GpuTypeView = {
      id: type.id,
      name: type.displayName,
      pool: type.pool,
      manufacturer: type.manufacturer,
      memory: type.memoryGb,
      secure: secure > 0,
      community: community > 0,
      // The fleet's price table has every catalog type (parseFleet fails otherwise).
      price: {
        secure: price?.secure ?? 0,
        community: price?.community ?? 0,
        ...(price?.serverless == null ? {} : { serverless: price.serverless }),
      },
      maxCount: { secure, community },
      availability: gpuAvailability(hosts, allocations, query),
    }
    if (!q.detail) return view

    const typeHosts = this.gpuHosts(type.id, q.cloud, q.countryCodes)
    // A type with no host in the countries asked for: availability NONE, and no detail.
    if (q.countryCodes?.length && typeHosts.length === 0) return view
    view.dataCenters = this.fleetDefinition.dataCenters
      .filter((dc) => typeHosts.some((h) => h.dataCenterId === dc.id))
      .map((dc) => ({
        id: dc.id,
        name: dc.name,
        availability: gpuAvailability(hosts, allocations, { ...query, dataCenterId: dc.id }),
      }))
    // Per version present in the fleet, whether a host with exactly that version can take the
    // pod now: the same meaning as the cudaVersions filter, so a client can feed one to the other.
    const versions = [
      ...new Set(typeHosts.flatMap((h) => (h.gpu?.cudaVersion ? [h.gpu.cudaVersion] : []))),
    ]
    // The versions asked for narrow the list too (RunPod's v2 catalog).
    view.cudaVersions = versions
      .filter((version) => !q.cudaVersions?.length || q.cudaVersions.includes(version))
      .filter(
        (version) =>
          q.minCudaVersion === undefined || compareCudaVersions(version, q.minCudaVersion) >= 0,
      )
      .sort((a, b) => compareCudaVersions(b, a))
      .map((version) => ({
        version,
        available:
          gpuAvailability(hosts, allocations, {
            ...query,
            cudaVersions: [version],
            minCudaVersion: undefined,
          }) !== 'NONE',
      }))
    return view
  }

  /** Flavors some host offers, with the largest vCPU count one such host can hold. */
  private fleetCpuFlavors(): Array<{ flavor: CpuFlavor; max: number }> {
    return this.offered.cpu
  }

  private computeFleetCpuFlavors(): Array<{ flavor: CpuFlavor; max: number }> {
    const out: Array<{ flavor: CpuFlavor; max: number }> = []
    for (const flavor of CPU_FLAVORS) {
      const hosts = eligibleCpuHosts(this.fleetDefinition.hosts, { flavorId: flavor.id })
      const max = Math.max(
        0,
        ...hosts.map((h) => largestVcpuCount(h.vcpus, h.memoryGb, flavor.ramGbPerVcpu)),
      )
      // A host too small for even the smallest slot offers the flavor in name only.
      if (max >= MIN_VCPU_COUNT) out.push({ flavor, max })
    }
    return out
  }

  private cpuTypeView(
    flavor: CpuFlavor,
    max: number,
    q: CpuQuery,
    { hosts, allocations }: Stock,
  ): CpuTypeView {
    const vcpuCount = q.vcpuCount ?? MIN_VCPU_COUNT
    const price = this.fleetDefinition.prices.cpus[flavor.id]
    const view: CpuTypeView = {
      id: flavor.id,
      name: flavor.name,
      group: flavor.group,
      vcpu: { min: MIN_VCPU_COUNT, max },
      vcpuCounts: vcpuCountsUpTo(max),
      ramGbPerVcpu: flavor.ramGbPerVcpu,
      price: {
        securePerVcpu: price?.securePerVcpu ?? 0,
        serverlessPerVcpu: price?.serverlessPerVcpu ?? 0,
      },
      availability: cpuAvailability(hosts, allocations, { flavorId: flavor.id, vcpuCount }),
    }
    if (!q.detail) return view
    const flavorHosts = eligibleCpuHosts(this.fleetDefinition.hosts, { flavorId: flavor.id })
    view.dataCenters = this.fleetDefinition.dataCenters
      .filter((dc) => flavorHosts.some((h) => h.dataCenterId === dc.id))
      .map((dc) => ({
        id: dc.id,
        name: dc.name,
        availability: cpuAvailability(hosts, allocations, {
          flavorId: flavor.id,
          vcpuCount,
          dataCenterId: dc.id,
        }),
      }))
    return view
  }

  private dataCenterView(
    dc: DataCenter,
    q: DataCenterQuery,
    { hosts, allocations }: Stock,
  ): DataCenterView {
    const view: DataCenterView = {
      id: dc.id,
      name: dc.name,
      region: dc.region,
      ...(dc.countryCode ? { countryCode: dc.countryCode } : {}),
      globalNetwork: dc.globalNetwork,
      networkVolumeTypes: [...dc.networkVolumeTypes],
      compliance: [...dc.compliance],
    }
    const here = this.fleetDefinition.hosts.filter((h) => h.dataCenterId === dc.id)
    if (q.gpuDetail) {
      const typeIds = new Set(here.flatMap((h) => (h.gpu ? [h.gpu.typeId] : [])))
      view.gpuAvailability = GPU_TYPES.filter((t) => typeIds.has(t.id)).map((t) => ({
        id: t.id,
        name: t.displayName,
        availability: gpuAvailability(hosts, allocations, {
          typeId: t.id,
          count: DEFAULT_GPU_COUNT,
          dataCenterId: dc.id,
        }),
      }))
    }
    if (q.cpuDetail) {
      view.cpuAvailability = this.fleetCpuFlavors()
        .filter(({ flavor }) => here.some((h) => h.cpuFlavors.includes(flavor.id)))
        .map(({ flavor }) => ({
          id: flavor.id,
          name: flavor.name,
          availability: cpuAvailability(hosts, allocations, {
            flavorId: flavor.id,
            vcpuCount: MIN_VCPU_COUNT,
            dataCenterId: dc.id,
          }),
        }))
    }
    return view
  }
}

interface Stock {
  hosts: Host[]
  allocations: Allocation[]
}

const NO_STOCK: Stock = { hosts: [], allocations: [] }

function matchesDataCenterQuery(dc: DataCenter, q: DataCenterQuery): boolean {
  if (q.globalNetwork !== undefined && dc.globalNetwork !== q.globalNetwork) return false
  if (q.regions?.length && !q.regions.includes(dc.region)) return false
  if (
    q.networkVolumeTypes?.length &&
    !q.networkVolumeTypes.every((t) => (dc.networkVolumeTypes as string[]).includes(t))
  ) {
    return false
  }
  if (q.compliance?.length && !q.compliance.every((c) => dc.compliance.includes(c))) return false
  if (q.countryCodes?.length && !(dc.countryCode && q.countryCodes.includes(dc.countryCode))) {
    return false
  }
  return true
}
