import { mountPathProblem } from '../../domain/pods/mount-paths.js'
import {
  envProblems,
  MAX_NAME_LENGTH,
  MIN_CONTAINER_DISK_GB,
  MIN_PERSISTENT_SIZE_GB,
  portProblems,
} from '../../domain/pods/pod-rules.js'
import {
  TEMPLATE_CATEGORIES,
  type Template,
  type TemplateCategory,
  type TemplateFields,
} from '../../domain/templates/template.js'
import type { CreateTemplateInput } from '../../domain/templates/template-service.js'
import { AppError } from '../../shared/app-error.js'
import { DEFAULT_VOLUME_MOUNT_PATH, parsePorts } from './pod-input.js'

type Nullable<T> = { [K in keyof T]?: T[K] | null }

/** `saveTemplate`'s input (wire-compat §6.3). */
export type SaveTemplateInput = Nullable<{
  id: string
  name: string
  imageName: string
  dockerArgs: string
  containerDiskInGb: number
  volumeInGb: number
  volumeMountPath: string
  ports: string
  env: Array<{ key: string; value?: string | null } | null>
  isServerless: boolean
  containerRegistryAuthId: string
  startSsh: boolean
  startJupyter: boolean
  startScript: string
  isPublic: boolean
  readme: string
  advancedStart: boolean
  category: string
  portsConfig: Array<{ port?: number | string | null; name?: string | null } | null>
}>

export type TemplateSave =
  | { kind: 'create'; template: CreateTemplateInput }
  | { kind: 'update'; id: string; patch: Partial<TemplateFields> }

const present = <T>(value: T | null | undefined): value is T =>
  value !== null && value !== undefined

function validationError(lines: string[]): AppError {
  return new AppError('VALIDATION_FAILED', `the request failed validation: ${lines.join('; ')}`, {
    errors: lines,
  })
}

/**
 * The persistent mount `volumeInGb` and `volumeMountPath` ask for: 0 is none (runpod-python
 * sends `volumeInGb: 0` when its caller gave no volume); the path alone moves an existing mount.
 * Undefined: leave the mount as it is.
 */
function mountsOf(
  input: SaveTemplateInput,
  current: Template['mounts'] | undefined,
): Template['mounts'] | undefined {
  const size = input.volumeInGb
  const path = input.volumeMountPath || undefined
  if (present(size)) {
    if (size === 0) return {}
    return {
      persistent: { size, path: path ?? current?.persistent?.path ?? DEFAULT_VOLUME_MOUNT_PATH },
    }
  }
  if (path && current?.persistent) return { persistent: { ...current.persistent, path } }
  return undefined
}

/**
 * saveTemplate's input -> a create (no id) or an update of the given fields (with id). A field
 * that is absent or null is left as it is (on create: the template default). Problems name
 * the GraphQL fields, as `input.<field>: <problem>`.
 *
 * Fields the Template has no place for: `readme` and `advancedStart` (console presentation)
 * are accepted and not stored; `portsConfig` (names of ports) likewise. A non-empty
 * `startScript` is refused: dropping it would start pods without the commands their owner
 * asked for.
 */
export function templateSave(input: SaveTemplateInput, current?: Template): TemplateSave {
  const problems: string[] = []
  const add = (field: string, problem: string) => problems.push(`input.${field}: ${problem}`)
  const creating = !input.id

  if (creating && !input.name) add('name', 'is required')
  if (present(input.name) && input.name.length > MAX_NAME_LENGTH)
    add('name', `must NOT have more than ${MAX_NAME_LENGTH} characters`)
  if (creating && !input.imageName) add('imageName', 'is required')
  if (!creating && input.name === '') add('name', 'must not be empty')
  if (!creating && input.imageName === '') add('imageName', 'must not be empty')
  if (present(input.containerDiskInGb) && input.containerDiskInGb < MIN_CONTAINER_DISK_GB)
    add('containerDiskInGb', `must be >= ${MIN_CONTAINER_DISK_GB}`)
  if (
    present(input.volumeInGb) &&
    input.volumeInGb !== 0 &&
    input.volumeInGb < MIN_PERSISTENT_SIZE_GB
  ) {
    add('volumeInGb', `must be 0 (no volume) or >= ${MIN_PERSISTENT_SIZE_GB}`)
  }
  const mountPath = input.volumeMountPath ? mountPathProblem(input.volumeMountPath) : undefined
  if (mountPath) add('volumeMountPath', mountPath)
  const category = input.category || undefined
  if (category && !(TEMPLATE_CATEGORIES as readonly string[]).includes(category))
    add('category', `must be one of ${TEMPLATE_CATEGORIES.join(', ')}`)
  if (input.startScript) add('startScript', 'is not offered: put the start commands in dockerArgs')

  const ports = present(input.ports) ? parsePorts(input.ports) : undefined
  for (const line of portProblems(ports ?? [])) problems.push(line.replace(/^body\./, 'input.'))
  const env = present(input.env) ? envOf(input.env) : undefined
  for (const line of envProblems(env ?? {})) problems.push(line.replace(/^body\./, 'input.'))
  if (problems.length > 0) throw validationError(problems)

  const mounts = mountsOf(input, current?.mounts)
  const fields: Partial<TemplateFields> = {
    ...(input.name ? { name: input.name } : {}),
    ...(input.imageName ? { image: input.imageName } : {}),
    // "" is a value here, unlike on pods: a template's empty args mean the image's default.
    ...(present(input.dockerArgs) ? { args: input.dockerArgs } : {}),
    ...(present(input.containerDiskInGb) ? { disk: input.containerDiskInGb } : {}),
    ...(ports ? { ports } : {}),
    ...(env ? { env } : {}),
    // runpod-python sends containerRegistryAuthId: "" for none.
    ...(present(input.containerRegistryAuthId)
      ? { registry: input.containerRegistryAuthId || null }
      : {}),
    ...(mounts ? { mounts } : {}),
    ...(present(input.isServerless) ? { serverless: input.isServerless } : {}),
    ...(present(input.isPublic) ? { public: input.isPublic } : {}),
    ...(category ? { category: category as TemplateCategory } : {}),
    ...(present(input.startSsh) ? { startSsh: input.startSsh } : {}),
    ...(present(input.startJupyter) ? { startJupyter: input.startJupyter } : {}),
  }
  if (creating) {
    return {
      kind: 'create',
      template: { ...fields, name: input.name!, image: input.imageName! },
    }
  }
  return { kind: 'update', id: input.id!, patch: fields }
}

function envOf(env: NonNullable<SaveTemplateInput['env']>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const entry of env) if (entry) out[entry.key] = entry.value ?? ''
  return out
}
