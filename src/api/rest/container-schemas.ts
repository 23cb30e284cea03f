import { Type } from '@sinclair/typebox'
import { isValidVcpuCount } from '../../domain/catalog/cpu-flavors.js'
import { mountPathProblems } from '../../domain/pods/mount-paths.js'
import type { PodMounts } from '../../domain/pods/pod.js'
import { envProblems, portProblems } from '../../domain/pods/pod-rules.js'
import { AppError } from '../../shared/app-error.js'

export const strict = { additionalProperties: false } as const

/** podyard's placement constraints on labels: an extension RunPod's clients never send. */
export const HostLabels = Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
  maxItems: 32,
  description:
    'podyard extension: labels the host must have, key=value, key!=value or key>=number (also >, <=, <), e.g. ["ib=true", "driver>=550"]; a pool is asked as pool=<name>',
})

export const MountPath = Type.String({
  minLength: 1,
  pattern: '^/',
  description: 'absolute path inside the container',
})

export const PersistentMount = Type.Object(
  { size: Type.Integer({ minimum: 10, description: 'GB of host-local storage' }), path: MountPath },
  strict,
)

/** Container configuration shared by templates, pods and endpoints (create and update forms). */
export const containerFields = {
  args: Type.Optional(
    Type.String({ description: 'run through /bin/sh -c; empty: the image default' }),
  ),
  disk: Type.Optional(Type.Integer({ minimum: 1, description: 'container disk, GB (default 50)' })),
  ports: Type.Optional(
    Type.Array(Type.String({ description: '<port>/<protocol>, e.g. 8888/http' })),
  ),
  env: Type.Optional(Type.Record(Type.String(), Type.String())),
  registry: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Null()])),
}

/**
 * Checks JSON Schema cannot express: ports, env names, mount paths (docs/pods.md, "Mount
 * paths"), vCPU powers of two (422 like the schema).
 */
export function checkContainerFields(body: {
  ports?: string[]
  env?: Record<string, string>
  cpu?: { vcpuCount: number }
  mounts?: PodMounts
}): void {
  const problems = [
    ...portProblems(body.ports ?? []),
    ...envProblems(body.env ?? {}),
    ...mountPathProblems(body.mounts, 'body.mounts'),
    ...(body.cpu && !isValidVcpuCount(body.cpu.vcpuCount)
      ? ['body.cpu.vcpuCount: must be a power of two >= 2']
      : []),
  ]
  if (problems.length > 0) {
    throw new AppError(
      'VALIDATION_FAILED',
      `the request failed validation: ${problems.join('; ')}`,
      {
        errors: problems,
      },
    )
  }
}
