import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { HostService } from '../../domain/hosts/host-service.js'
import { CONTAINED_LIMITS } from '../../shared/contained-limits.js'
import { adminOnly } from './admin-access.js'
import { ProblemSchema } from './problem-schema.js'

const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T) =>
  Type.Union([schema, Type.Null()])

const NullableNumber = Type.Union([Type.Number(), Type.Null()])

const GpuSchema = Type.Object({
  index: Type.Integer(),
  uuid: Nullable(Type.String()),
  health: Type.Union([Type.Literal('HEALTHY'), Type.Literal('WITHDRAWN')], {
    description: 'WITHDRAWN: takes no new pods until an operator resets it (gpu-reset)',
  }),
  reason: Nullable(Type.String()),
  withdrawnAt: Nullable(Type.String({ format: 'date-time' })),
  warnings: Type.Array(Type.String(), {
    description: 'thermal or hardware throttling, XIDs an application usually causes',
  }),
  sampledAt: Nullable(Type.String({ format: 'date-time' })),
  responding: Type.Boolean(),
  utilPercent: NullableNumber,
  memoryUsedPercent: NullableNumber,
  memoryUsedMib: NullableNumber,
  memoryTotalMib: NullableNumber,
  temperatureC: NullableNumber,
  powerDrawW: NullableNumber,
})

/** A host's GPUs: its one type, how many, the CUDA version; null for a CPU host. */
const HostGpus = Type.Union([
  Type.Object({
    typeId: Type.String(),
    count: Type.Integer(),
    cudaVersion: Type.Union([Type.String(), Type.Null()]),
  }),
  Type.Null(),
])

export const HostSchema = Type.Object({
  id: Type.String(),
  dataCenterId: Type.String(),
  cloud: Type.String(),
  gpu: HostGpus,
  vcpus: Type.Integer(),
  memoryGb: Type.Integer(),
  diskGb: Type.Integer(),
  driver: Type.String(),
  simulated: Type.Boolean(),
  addedAtRuntime: Type.Boolean({
    description:
      'added at runtime (PATCH and DELETE change it); false: declared in the configured fleet, read-only here',
  }),
  runtime: Type.String({ description: 'where its workloads run: this machine, or its engine URL' }),
  publicIp: Type.String({ description: "where its pods' published ports are reached" }),
  labels: Type.Record(Type.String(), Type.String(), {
    description:
      "the admin's labels (pool=team-a reserves the host to the accounts bound to pool team-a)",
  }),
  state: Type.Union(
    [Type.Literal('UP'), Type.Literal('DEGRADED'), Type.Literal('DOWN'), Type.Literal('UNKNOWN')],
    { description: 'DEGRADED: up, with a GPU withdrawn for its health (stateReason names it)' },
  ),
  stateReason: Nullable(Type.String()),
  stateSince: Type.String({ format: 'date-time' }),
  checkedAt: Nullable(Type.String({ format: 'date-time' })),
  schedule: Type.Union([
    Type.Literal('ACTIVE'),
    Type.Literal('CORDONED'),
    Type.Literal('DRAINING'),
  ]),
  placeable: Type.Boolean(),
  unplaceableReason: Nullable(Type.String()),
  reported: Type.Union([
    Type.Object({
      name: Type.String(),
      engineId: Type.Optional(
        Type.String({
          description:
            "the engine's own id (Docker's /info ID): a second real host reporting the same one is DOWN",
        }),
      ),
      cpus: Type.Integer(),
      memoryGb: Type.Number(),
      serverVersion: Type.String(),
      runtimes: Type.Array(Type.String()),
      gpus: Type.Optional(
        Type.Array(
          Type.Object({
            index: Type.Integer(),
            uuid: Type.String(),
            name: Type.String({ description: 'as nvidia-smi prints it' }),
            typeId: Type.String({ description: 'the catalog GPU type id of that name' }),
            memoryMib: Type.Union([Type.Integer(), Type.Null()]),
            driverVersion: Type.Union([Type.String(), Type.Null()]),
          }),
          {
            description:
              "the NVIDIA GPUs the host's engine gave a probe container (absent without the nvidia runtime)",
          },
        ),
      ),
      cudaVersion: Type.Optional(Type.Union([Type.String(), Type.Null()])),
      gpuProbeError: Type.Optional(Type.String({ description: 'why its GPUs could not be read' })),
    }),
    Type.Null(),
  ]),
  offered: Type.Object(
    {
      gpu: HostGpus,
      vcpus: Type.Integer(),
      memoryGb: Type.Integer(),
    },
    {
      description:
        'what catalog stock and placement count: the declaration lowered to what the host reported (warnings say why)',
    },
  ),
  unenforcedLimits: Type.Array(
    Type.Object({
      limit: Type.Union(CONTAINED_LIMITS.map((limit) => Type.Literal(limit))),
      reason: Type.String(),
      accepted: Type.Boolean({
        description:
          "the operator accepts the risk (containment.acceptUnenforced); while one is not accepted, other accounts' workloads are refused here (for volume: those that mount a network volume)",
      }),
    }),
    {
      description:
        'limits of a workload (memory, cpu, pids, disk, diskWrite, volume) this host does not enforce, as its engine or driver reported them (volume also where its data center keeps network volumes on shared storage)',
    },
  ),
  warnings: Type.Array(Type.String()),
  podCount: Type.Integer(),
  globalNetworking: Type.Object(
    {
      offered: Type.Boolean({ description: "its data center's fleet entry has globalNetwork" }),
      subnet: Nullable(
        Type.String({
          description:
            "the range of the pods' addresses (10.0.0.0/8); each account's network has it to itself",
        }),
      ),
      members: Type.Integer({
        description: 'pods here (not terminated) with globalNetworking',
      }),
      accounts: Type.Integer({ description: "how many accounts' networks those pods are on" }),
    },
    { description: 'global networking on this host (docs/fleet.md, "Host state")' },
  ),
  gpus: Type.Array(GpuSchema, {
    description:
      "the host's GPUs as its sampler last read them (nvidia-smi); empty for simulated GPUs and before the first reading",
  }),
})

export const PodOnHostSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  accountId: Type.String(),
  status: Type.String(),
})

const PodLeftSchema = Type.Intersect([
  PodOnHostSchema,
  Type.Object({
    notMovedBecause: Type.Optional(
      Type.String({ description: 'with migrate: why the pod was not moved' }),
    ),
  }),
])

const PodMovedSchema = Type.Intersect([
  PodOnHostSchema,
  Type.Object({ movedTo: Type.String({ description: 'the host it was started on' }) }),
])

const DrainQuery = Type.Object({
  migrate: Type.Optional(
    Type.Boolean({
      default: false,
      description:
        'also move each running pod without a host-local volume: stopped here, started again on another host with the same id',
    }),
  ),
})

const HostParams = Type.Object({ hostId: Type.String({ minLength: 1, maxLength: 200 }) })
type HostParams = Static<typeof HostParams>
const GpuParams = Type.Object({
  hostId: Type.String({ minLength: 1, maxLength: 200 }),
  index: Type.Integer({ minimum: 0, maximum: 1023 }),
})
type GpuParams = Static<typeof GpuParams>
const errors = { 401: ProblemSchema, 403: ProblemSchema, 404: ProblemSchema, 429: ProblemSchema }
const tags = ['Admin']

/** What only the admin may do on the host routes (their refusal's words). */
export const MANAGE_HOSTS = "see and manage the fleet's hosts"

/**
 * The operator's hosts (docs/fleet.md, "Host state"): their state and schedule, cordon,
 * uncordon and drain. Admin only; an extension of ours, not part of RunPod's API.
 */
export async function adminHostRoutes(
  app: FastifyInstance,
  { hosts }: { hosts: HostService },
): Promise<void> {
  app.get(
    '/admin/hosts',
    {
      config: adminOnly(MANAGE_HOSTS),
      schema: {
        tags,
        operationId: 'listHosts',
        summary: "The fleet's hosts with their state and schedule",
        response: { 200: Type.Object({ hosts: Type.Array(HostSchema) }), ...errors },
      },
    },
    async () => {
      return { hosts: await hosts.list() }
    },
  )

  app.get<{ Params: HostParams }>(
    '/admin/hosts/:hostId',
    {
      config: adminOnly(MANAGE_HOSTS),
      schema: {
        tags,
        operationId: 'getHost',
        summary: 'A host with its state, schedule and the pods on it',
        params: HostParams,
        response: {
          200: Type.Intersect([HostSchema, Type.Object({ pods: Type.Array(PodOnHostSchema) })]),
          ...errors,
        },
      },
    },
    async (request) => {
      return hosts.get(request.params.hostId)
    },
  )

  for (const action of ['cordon', 'uncordon'] as const) {
    app.post<{ Params: HostParams }>(
      `/admin/hosts/:hostId/${action}`,
      {
        config: adminOnly(MANAGE_HOSTS),
        schema: {
          tags,
          operationId: `${action}Host`,
          summary:
            action === 'cordon'
              ? 'Place no new pods or workers on the host'
              : 'Place pods and workers on the host again (ends a cordon or a drain)',
          params: HostParams,
          response: { 200: HostSchema, ...errors },
        },
      },
      async (request) => {
        return hosts[action](request.params.hostId)
      },
    )
  }

  app.post<{ Params: HostParams; Querystring: Static<typeof DrainQuery> }>(
    '/admin/hosts/:hostId/drain',
    {
      config: adminOnly(MANAGE_HOSTS),
      schema: {
        tags,
        operationId: 'drainHost',
        summary:
          'No new placements on the host, its serverless workers moved off (and with migrate its pods); lists the pods left',
        params: HostParams,
        querystring: DrainQuery,
        response: {
          200: Type.Object({
            host: HostSchema,
            podsLeft: Type.Array(PodLeftSchema),
            podsMoved: Type.Array(PodMovedSchema, {
              description: 'with migrate: the pods started on other hosts',
            }),
          }),
          422: ProblemSchema,
          ...errors,
        },
      },
    },
    async (request) => {
      return hosts.drain(request.params.hostId, { migrate: request.query.migrate ?? false })
    },
  )

  app.post<{ Params: GpuParams }>(
    '/admin/hosts/:hostId/gpus/:index/reset',
    {
      config: adminOnly(MANAGE_HOSTS),
      schema: {
        tags,
        operationId: 'resetHostGpu',
        summary:
          'Put a GPU withdrawn for its health back into placement, once it is fixed (docs/gpus.md)',
        params: GpuParams,
        // 422: an index that is not an integer.
        response: { 200: HostSchema, 422: ProblemSchema, ...errors },
      },
    },
    async (request) => {
      return hosts.gpuReset(request.params.hostId, request.params.index)
    },
  )
}
