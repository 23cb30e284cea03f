import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { HostDeclarationSchema } from '../../domain/catalog/fleet-schema.js'
import type { HostService } from '../../domain/hosts/host-service.js'
import type { ManagedHostService } from '../../domain/hosts/managed-hosts.js'
import { adminOnly } from './admin-access.js'
import { HostSchema, MANAGE_HOSTS, PodOnHostSchema } from './admin-host-routes.js'
import { ProblemSchema } from './problem-schema.js'

const HostParams = Type.Object({ hostId: Type.String({ minLength: 1, maxLength: 200 }) })
type HostParams = Static<typeof HostParams>

const { docker, publicIp, labels: _labels, ...fixed } = HostDeclarationSchema.properties
/**
 * Every field optional; null removes docker or publicIp (gpu: null, a CPU host); labels merge,
 * a label given null is removed (labels: null removes them all).
 */
const HostPatchSchema = Type.Partial(
  Type.Object(
    {
      ...fixed,
      docker: Type.Union([Type.Unsafe(docker), Type.Null()]),
      publicIp: Type.Union([Type.Unsafe(publicIp), Type.Null()]),
      labels: Type.Union([
        Type.Record(Type.String(), Type.Union([Type.String(), Type.Null()]), {
          description: 'labels to set; a label given null is removed, the others are kept',
        }),
        Type.Null(),
      ]),
    },
    { additionalProperties: false },
  ),
)

const FleetBody = Type.Object(
  {
    hosts: Type.Array(HostDeclarationSchema, {
      maxItems: 10_000,
      description: "every host added at runtime, as the fleet file's hosts: declares them",
    }),
  },
  { additionalProperties: false },
)
type FleetBody = Static<typeof FleetBody>

const FleetChanges = Type.Object({
  changes: Type.Array(
    Type.Object({
      action: Type.Union([Type.Literal('add'), Type.Literal('update'), Type.Literal('remove')]),
      hostId: Type.String(),
      fields: Type.Optional(
        Type.Array(Type.String(), { description: 'for update: `field: old -> new`' }),
      ),
    }),
  ),
})

const HostWithPods = Type.Intersect([
  HostSchema,
  Type.Object({ pods: Type.Array(PodOnHostSchema) }),
])
const errors = {
  401: ProblemSchema,
  403: ProblemSchema,
  404: ProblemSchema,
  409: ProblemSchema,
  422: ProblemSchema,
  429: ProblemSchema,
}
const tags = ['Admin']

/**
 * Hosts added, changed and removed at runtime (docs/fleet.md, "Adding a machine"), stored in
 * the database so that every replica's fleet follows; `fleet/diff` and `fleet/apply` take a
 * declarative list of those hosts. Admin only; an extension of ours, not part of RunPod's API.
 */
export async function adminFleetRoutes(
  app: FastifyInstance,
  { hosts, managed }: { hosts: HostService; managed: ManagedHostService },
): Promise<void> {
  app.post<{ Body: Static<typeof HostDeclarationSchema> }>(
    '/admin/hosts',
    {
      config: adminOnly(MANAGE_HOSTS),
      schema: {
        tags,
        operationId: 'addHost',
        summary: 'Add a host to the fleet of every replica, without a restart',
        body: HostDeclarationSchema,
        response: { 201: HostWithPods, ...errors },
      },
    },
    async (request, reply) => {
      const host = await managed.add(request.body)
      return reply.code(201).send(await hosts.get(host.id))
    },
  )

  app.patch<{ Params: HostParams; Body: Static<typeof HostPatchSchema> }>(
    '/admin/hosts/:hostId',
    {
      config: adminOnly(MANAGE_HOSTS),
      schema: {
        tags,
        operationId: 'updateHost',
        summary:
          'Change a host added at runtime (the fields given; null removes docker or publicIp); 409 for a shrink or a move while pods or workers are on it',
        params: HostParams,
        body: HostPatchSchema,
        response: { 200: HostWithPods, ...errors },
      },
    },
    async (request) => {
      await managed.update(request.params.hostId, request.body as Record<string, unknown>)
      return hosts.get(request.params.hostId)
    },
  )

  app.delete<{ Params: HostParams }>(
    '/admin/hosts/:hostId',
    {
      config: adminOnly(MANAGE_HOSTS),
      schema: {
        tags,
        operationId: 'removeHost',
        summary: 'Remove a host added at runtime; refused (409) while pods or workers are on it',
        params: HostParams,
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await managed.remove(request.params.hostId)
      return reply.code(204).send()
    },
  )

  for (const action of ['diff', 'apply'] as const) {
    app.post<{ Body: FleetBody }>(
      `/admin/fleet/${action}`,
      {
        config: adminOnly(MANAGE_HOSTS),
        schema: {
          tags,
          operationId: action === 'diff' ? 'diffFleet' : 'applyFleet',
          summary:
            action === 'diff'
              ? 'What applying this list of hosts would add, change and remove (changes nothing)'
              : 'Make the hosts added at runtime this list: add, change and remove to match',
          body: FleetBody,
          response: { 200: FleetChanges, ...errors },
        },
      },
      async (request) => {
        if (action === 'diff') return { changes: (await managed.plan(request.body.hosts)).changes }
        return { changes: await managed.apply(request.body.hosts) }
      },
    )
  }
}
