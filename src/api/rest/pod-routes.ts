import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply } from 'fastify'
import {
  POD_STATUSES,
  type Pod,
  type PodActionRequest,
  type PodRuntime,
} from '../../domain/pods/pod.js'
import { actionsFor, costOf, INTERNAL_DOMAIN } from '../../domain/pods/pod-rules.js'
import type { PodService } from '../../domain/pods/pod-service.js'
import { AppError } from '../../shared/app-error.js'
import { principalOf } from '../http/authentication.js'
import { checkContainerFields } from './container-schemas.js'
import { logSourcesOf, sendLogStream } from './log-stream.js'
import { LogEvents } from '../openapi/documented-schemas.js'
import { ProblemSchema } from './problem-schema.js'
import { PodAnswerText } from './pod-answer-text.js'
import {
  CreatePodBody,
  PodActionBody,
  PodListQuery,
  PodLogsQuery,
  PodSchema,
  UpdatePodBody,
} from './pod-schemas.js'
import { traceOriginOf } from '../http/trace-context.js'
import { enumValues } from './query-lists.js'

const IdParams = Type.Object({ id: Type.String({ minLength: 1 }) })
const errors = { 401: ProblemSchema, 403: ProblemSchema, 404: ProblemSchema, 429: ProblemSchema }
const writeErrors = { ...errors, 400: ProblemSchema, 409: ProblemSchema, 422: ProblemSchema }
/** What starts a pod may cost more than the account may spend (docs/billing.md). */
const payingErrors = { ...writeErrors, 402: ProblemSchema }

/** The user RunPod's images log in as over SSH. */
export const SSH_USER = 'root'

/**
 * RunPod's v2 `ssh` block, always present: a direct connection to the published port of a pod
 * that exposes 22/tcp once it runs (the key it accepts is the account's, when created with
 * startSsh), else null; never a proxy (podyard runs none).
 */
export function sshOf(pod: Pod, runtime: PodRuntime | null): Static<typeof PodSchema>['ssh'] {
  if (!pod.ports.includes('22/tcp')) return { proxy: null, direct: null }
  const port = runtime?.ports.find((p) => p.private === 22 && p.type === 'tcp')
  const direct =
    port?.public && port.ip
      ? {
          host: port.ip,
          port: port.public,
          username: SSH_USER,
          command: `ssh ${SSH_USER}@${port.ip} -p ${port.public}`,
        }
      : null
  return { proxy: null, direct }
}

export function podView(
  pod: Pod,
  runtime: PodRuntime | null,
  cudaVersion: string | null,
): Static<typeof PodSchema> {
  return {
    id: pod.id,
    name: pod.name,
    status: pod.status,
    actions: actionsFor(pod.status),
    image: pod.image,
    imageName: pod.image,
    args: pod.args,
    disk: pod.disk,
    ports: pod.ports,
    env: pod.env,
    registry: pod.registry,
    mounts: pod.mounts,
    ...(pod.compute.kind === 'gpu'
      ? { gpu: { id: pod.compute.gpuTypeId, count: pod.compute.gpuCount } }
      : {
          cpu: {
            id: pod.compute.flavorId,
            vcpuCount: pod.compute.vcpuCount,
            memory: pod.compute.memoryGb,
          },
        }),
    cloud: pod.cloud,
    dataCenterId: pod.dataCenterId,
    template: pod.templateId,
    ...(pod.cluster ? { cluster: pod.cluster } : {}),
    cudaVersion,
    ssh: sshOf(pod, runtime),
    cost: costOf(pod),
    locked: pod.locked,
    ...(pod.requirements?.hostLabels?.length ? { hostLabels: pod.requirements.hostLabels } : {}),
    globalNetworking: pod.globalIp
      ? { enabled: true, ip: pod.globalIp, internalDns: `${pod.id}.${INTERNAL_DOMAIN}` }
      : { enabled: false },
    runtime,
    statusReason: pod.statusReason,
    createdAt: pod.createdAt,
    startedAt: pod.startedAt,
  }
}

/**
 * Pod answers go out as JSON text made by `PodAnswerText` (JSON.stringify of `podView`, kept per
 * pod), not through the schema's serializer: `podView` builds every field of PodSchema itself
 * (its type is the schema's), and fast-json-stringify checked each value of the schema's unions
 * against each branch with Ajv on every reply, which cost more than reading the pod
 * (bench/README.md). The schema still documents the answer and validates it in the tests. A
 * string is sent as it is, with the Content-Type set here as the schema's serializer would have
 * (clients generated from the document choose their parser by it).
 */
function sendJsonText(reply: FastifyReply, text: string): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(text)
}

/** The text of pod answers, kept per pod between reads (pod-answer-text.ts). */
export function podAnswerText(): PodAnswerText {
  return new PodAnswerText(
    ({ pod, runtime, cudaVersion }, live) => ({
      ...podView(pod, runtime, cudaVersion),
      ssh: live.ssh,
      runtime: live.runtime,
    }),
    sshOf,
  )
}

/** A pod as REST answers it, with its live runtime and its host's CUDA version. */
export async function podAnswer(pods: PodService, pod: Pod): Promise<Static<typeof PodSchema>> {
  return podView(pod, await pods.runtimeOf(pod), pods.hostCudaVersionOf(pod))
}

export async function podRoutes(
  app: FastifyInstance,
  { pods }: { pods: PodService },
): Promise<void> {
  const answers = podAnswerText()
  const view = async (pod: Pod) =>
    answers.text({
      pod,
      runtime: await pods.runtimeOf(pod),
      cudaVersion: pods.hostCudaVersionOf(pod),
    })

  app.post<{ Body: CreatePodBody }>(
    '/pods',
    {
      schema: {
        tags: ['Pods'],
        operationId: 'createPod',
        summary: 'Create a pod',
        body: CreatePodBody,
        response: { 201: PodSchema, ...payingErrors },
      },
    },
    async (request, reply) => {
      checkContainerFields(request.body)
      const trace = traceOriginOf(request)
      const pod = await pods.create(
        principalOf(request).accountId,
        request.body,
        trace ? { trace } : {},
      )
      return sendJsonText(reply.code(201), await view(pod))
    },
  )

  app.get<{ Querystring: Static<typeof PodListQuery> }>(
    '/pods',
    {
      schema: {
        tags: ['Pods'],
        operationId: 'listPods',
        summary: 'The pods of the account',
        querystring: PodListQuery,
        response: { 200: Type.Object({ pods: Type.Array(PodSchema) }), ...errors },
      },
    },
    async (request, reply) => {
      const statuses = enumValues('status', request.query.status, POD_STATUSES)
      const list = await pods.list(principalOf(request).accountId, {
        ...(statuses ? { statuses } : {}),
        ...(request.query.name !== undefined ? { name: request.query.name } : {}),
        includeClusterPods: request.query.includeClusterPods ?? false,
      })
      return sendJsonText(reply, `{"pods":[${(await Promise.all(list.map(view))).join(',')}]}`)
    },
  )

  app.get<{ Params: Static<typeof IdParams> }>(
    '/pods/:id',
    {
      schema: {
        tags: ['Pods'],
        operationId: 'getPod',
        summary: 'One pod',
        params: IdParams,
        response: { 200: PodSchema, ...errors },
      },
    },
    async (request, reply) =>
      sendJsonText(
        reply,
        await view(await pods.get(principalOf(request).accountId, request.params.id)),
      ),
  )

  app.patch<{ Params: Static<typeof IdParams>; Body: UpdatePodBody }>(
    '/pods/:id',
    {
      schema: {
        tags: ['Pods'],
        operationId: 'updatePod',
        summary: 'Change a pod (a running pod restarts when its container changes)',
        params: IdParams,
        body: UpdatePodBody,
        response: { 200: PodSchema, ...writeErrors },
      },
    },
    async (request, reply) => {
      checkContainerFields(request.body)
      const { templateId, ...patch } = request.body
      if (templateId !== undefined) {
        throw new AppError(
          'RULE_CONFLICT',
          "a pod's template is chosen at create; PATCH the fields you want to change instead",
        )
      }
      const pod = await pods.update(principalOf(request).accountId, request.params.id, patch)
      return sendJsonText(reply, await view(pod))
    },
  )

  app.post<{ Params: Static<typeof IdParams>; Body: Static<typeof PodActionBody> }>(
    '/pods/:id/action',
    {
      schema: {
        tags: ['Pods'],
        operationId: 'podAction',
        summary: 'Start, stop, restart or terminate a pod',
        params: IdParams,
        body: PodActionBody,
        response: { 200: PodSchema, 204: Type.Null(), ...payingErrors },
      },
    },
    async (request, reply) => {
      const pod = await pods.act(
        principalOf(request).accountId,
        request.params.id,
        request.body.action as PodActionRequest,
      )
      if (request.body.action === 'terminate') return reply.code(204).send()
      return sendJsonText(reply, await view(pod))
    },
  )

  app.delete<{ Params: Static<typeof IdParams> }>(
    '/pods/:id',
    {
      schema: {
        tags: ['Pods'],
        operationId: 'deletePod',
        summary: 'Terminate a pod',
        description: 'A pod of an instant cluster is 409: delete the cluster.',
        params: IdParams,
        response: { 204: Type.Null(), 409: ProblemSchema, ...errors },
      },
    },
    async (request, reply) => {
      await pods.terminate(principalOf(request).accountId, request.params.id)
      return reply.code(204).send()
    },
  )

  app.get<{ Params: Static<typeof IdParams>; Querystring: Static<typeof PodLogsQuery> }>(
    '/pods/:id/logs',
    {
      schema: {
        tags: ['Pods'],
        operationId: 'getPodLogs',
        summary: "A pod's container and system logs as server-sent events",
        description:
          'Server-sent events: `id: <ts>/<seq>` (both sources: `<ts>/<containerSeq>.<systemSeq>`), `data: {"ts","source","line"}`; resume with Last-Event-ID. Without `source`, container and system lines interleaved by time.',
        params: IdParams,
        querystring: PodLogsQuery,
        response: { ...errors, 422: ProblemSchema },
        documented: { response: { 200: LogEvents } },
      },
    },
    async (request, reply: FastifyReply) => {
      const pod = await pods.get(principalOf(request).accountId, request.params.id)
      await sendLogStream(
        request,
        reply,
        request.query,
        logSourcesOf(request.query.source).map((source) => ({
          source,
          read: (query) => pods.readLogs(pod, source, query),
          follow: (afterSeq, signal) => pods.followLogs(pod, source, afterSeq, signal),
        })),
      )
    },
  )
}
