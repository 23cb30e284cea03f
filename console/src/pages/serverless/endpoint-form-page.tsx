import { useState } from 'react'
import { Link, useLocation, useParams } from 'wouter'
import { ok } from '../../api/client'
import type {
  CpuFlavor,
  CreateEndpointBody,
  Endpoint,
  GpuType,
  NetworkVolume,
  Template,
} from '../../api/types'
import { ActionForm } from '../../components/action-form'
import { CountOptions, TemplateOptions } from '../../components/catalog-options'
import { CheckOption, ChoiceGroup, toggled } from '../../components/choices'
import { ErrorMessage } from '../../components/error-message'
import { NumberField, SelectField, TextField } from '../../components/form-fields'
import { perHour } from '../../components/format'
import { envOf, KeyValueEditor, rowsOf } from '../../components/key-value-editor'
import { Page, Section } from '../../components/page'
import { ResourceView } from '../../components/resource-view'
import { useAction } from '../../hooks/use-action'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'

type ScalingType = 'QUEUE_DELAY' | 'REQUEST_COUNT'
type Pool = NonNullable<NonNullable<CreateEndpointBody['gpu']>['pools']>[number]

interface Choices {
  gpus: GpuType[]
  cpus: CpuFlavor[]
  templates: Template[]
  volumes: NetworkVolume[]
  endpoint?: Endpoint
}

/** Create an endpoint (`/serverless/new`) or change one (`/serverless/:id/edit`). */
export function EndpointFormPage() {
  const params = useParams<{ id?: string }>()
  const { api } = useSession()
  const choices = useResource<Choices>(
    async (signal) => {
      const [gpus, cpus, templates, volumes, endpoint] = await Promise.all([
        ok(api.GET('/v2/catalog/gpus', { params: { query: { product: ['SERVERLESS'] } }, signal })),
        ok(api.GET('/v2/catalog/cpus', { params: { query: { product: ['SERVERLESS'] } }, signal })),
        ok(api.GET('/v2/templates', { signal })),
        ok(api.GET('/v2/network-volumes', { signal })),
        params.id
          ? ok(api.GET('/v2/serverless/{id}', { params: { path: { id: params.id } }, signal }))
          : undefined,
      ])
      return {
        gpus: gpus.gpus,
        cpus: cpus.cpus,
        templates: templates.templates.filter((t) => t.serverless),
        volumes: volumes.networkVolumes,
        ...(endpoint ? { endpoint } : {}),
      }
    },
    [api, params.id],
  )
  return (
    <Page title={params.id ? 'Edit endpoint' : 'New serverless endpoint'}>
      <ResourceView resource={choices} what="the choices">
        {(data) => <EndpointForm choices={data} />}
      </ResourceView>
    </Page>
  )
}

/** The serverless pools of the catalog, each with the GPU types in it. */
function poolsOf(gpus: GpuType[]) {
  const pools = new Map<string, { names: string[]; price: number | null }>()
  for (const gpu of gpus) {
    if (!gpu.pool) continue
    const pool = pools.get(gpu.pool) ?? { names: [], price: null }
    pool.names.push(gpu.name)
    if (gpu.price.serverless !== undefined)
      pool.price = Math.min(pool.price ?? Infinity, gpu.price.serverless)
    pools.set(gpu.pool, pool)
  }
  return [...pools.entries()]
}

function EndpointForm({ choices }: { choices: Choices }) {
  const { api } = useSession()
  const [, navigate] = useLocation()
  const existing = choices.endpoint
  const firstCpu = choices.cpus[0]
  const [name, setName] = useState(existing?.name ?? '')
  const [source, setSource] = useState<'image' | 'template'>(
    existing?.templateId ? 'template' : 'image',
  )
  const [image, setImage] = useState(existing?.image ?? '')
  const [templateId, setTemplateId] = useState(existing?.templateId ?? '')
  const [args, setArgs] = useState(existing?.args ?? '')
  const [compute, setCompute] = useState<'gpu' | 'cpu'>(
    existing ? (existing.cpu ? 'cpu' : 'gpu') : 'gpu',
  )
  const [pools, setPools] = useState<string[]>(existing?.gpu?.pools ?? [])
  const [gpuCount, setGpuCount] = useState(existing?.gpu?.count ?? 1)
  const [cpuId, setCpuId] = useState(existing?.cpu?.[0]?.id ?? firstCpu?.id ?? '')
  const [vcpuCount, setVcpuCount] = useState(
    existing?.cpu?.[0]?.vcpuCount ?? firstCpu?.vcpuCounts[0] ?? 2,
  )
  const [min, setMin] = useState(existing?.workers.min ?? 0)
  const [max, setMax] = useState(existing?.workers.max ?? 3)
  const [idleTimeout, setIdleTimeout] = useState(existing?.workers.idleTimeout ?? 10)
  const [scalingType, setScalingType] = useState<ScalingType>(
    existing?.scaling.type ?? 'QUEUE_DELAY',
  )
  const [scalingValue, setScalingValue] = useState(
    existing
      ? existing.scaling.type === 'QUEUE_DELAY'
        ? existing.scaling.queueDelay
        : existing.scaling.requestCount
      : 4,
  )
  const [volumes, setVolumes] = useState<string[]>(existing?.networkVolumes ?? [])
  const [timeoutSeconds, setTimeoutSeconds] = useState((existing?.timeout ?? 300_000) / 1000)
  const [env, setEnv] = useState(rowsOf(existing?.env))

  const save = useAction(async (body: CreateEndpointBody) => {
    const saved = existing
      ? await ok(api.PATCH('/v2/serverless/{id}', { params: { path: { id: existing.id } }, body }))
      : await ok(api.POST('/v2/serverless', { body }))
    navigate(`/serverless/${saved.id}`)
  })

  const submit = () => {
    const flavor = choices.cpus.find((f) => f.id === cpuId)
    const body: CreateEndpointBody = {
      name: name.trim(),
      ...(source === 'image' ? { image: image.trim() } : { templateId }),
      args,
      env: envOf(env),
      ...(compute === 'gpu'
        ? { gpu: { pools: pools as Pool[], count: gpuCount } }
        : {
            cpu: [
              {
                id: cpuId,
                vcpuCount: flavor?.vcpuCounts.includes(vcpuCount)
                  ? vcpuCount
                  : (flavor?.vcpuCounts[0] ?? vcpuCount),
              },
            ],
          }),
      workers: { min, max, ...(scalingType === 'QUEUE_DELAY' ? { idleTimeout } : {}) },
      scaling:
        scalingType === 'QUEUE_DELAY'
          ? { type: 'QUEUE_DELAY', queueDelay: scalingValue }
          : { type: 'REQUEST_COUNT', requestCount: scalingValue },
      networkVolumes: volumes,
      timeout: Math.round(timeoutSeconds * 1000),
    }
    void save.run(body)
  }

  const flavor = choices.cpus.find((f) => f.id === cpuId)

  return (
    <ActionForm label={existing ? 'Edit endpoint' : 'New endpoint'} onSubmit={submit}>
      <Section title="Endpoint">
        <TextField label="Name" required value={name} onChange={setName} />
        <ChoiceGroup
          legend="Workers run"
          name="source"
          value={source}
          choices={[
            ['image', 'an image'],
            ['template', 'a serverless template'],
          ]}
          onChange={setSource}
        />
        {source === 'image' ? (
          <TextField label="Image" required value={image} onChange={setImage} />
        ) : (
          <SelectField label="Template" required value={templateId} onChange={setTemplateId}>
            <option value="">choose…</option>
            <TemplateOptions templates={choices.templates} />
          </SelectField>
        )}
        <TextField
          label="Command"
          hint="Run through /bin/sh -c in each worker; empty runs the image’s own."
          mono
          value={args}
          onChange={setArgs}
        />
      </Section>

      <Section title="Compute">
        {existing ? (
          <p className="hint">The compute type is fixed when the endpoint is created.</p>
        ) : (
          <ChoiceGroup
            legend="Kind"
            name="compute"
            value={compute}
            choices={[
              ['gpu', 'GPU pools'],
              ['cpu', 'CPU'],
            ]}
            onChange={setCompute}
          />
        )}
        {compute === 'gpu' ? (
          <>
            <fieldset className="options">
              <legend>GPU pools</legend>
              {poolsOf(choices.gpus).map(([pool, info]) => (
                <CheckOption
                  key={pool}
                  checked={pools.includes(pool)}
                  onChange={() => setPools(toggled(pools, pool))}
                >
                  <span>
                    <strong>{pool}</strong> {info.names.join(', ')} · from {perHour(info.price)}
                  </span>
                </CheckOption>
              ))}
            </fieldset>
            <NumberField label="GPUs per worker" min={1} value={gpuCount} onChange={setGpuCount} />
          </>
        ) : (
          <div className="row">
            <SelectField label="CPU flavor" value={cpuId} onChange={setCpuId}>
              {choices.cpus.map((f) => (
                <option key={f.id} value={f.id}>
                  {f.name} ({f.id}) · {perHour(f.price.serverlessPerVcpu)} per vCPU
                </option>
              ))}
            </SelectField>
            <SelectField
              label="vCPUs per worker"
              value={vcpuCount}
              onChange={(value) => setVcpuCount(Number(value))}
            >
              <CountOptions counts={flavor?.vcpuCounts ?? []} />
            </SelectField>
          </div>
        )}
      </Section>

      <Section title="Scaling">
        <div className="row">
          <NumberField label="Workers min" min={0} max={100} value={min} onChange={setMin} />
          <NumberField label="Workers max" min={0} max={100} value={max} onChange={setMax} />
          {scalingType === 'QUEUE_DELAY' ? (
            <NumberField
              label="Idle timeout (s)"
              hint="How long an idle worker stays."
              min={1}
              max={3600}
              value={idleTimeout}
              onChange={setIdleTimeout}
            />
          ) : null}
        </div>
        <div className="row">
          <SelectField
            label="Scale by"
            value={scalingType}
            onChange={(value) => setScalingType(value as ScalingType)}
          >
            <option value="QUEUE_DELAY">queue delay</option>
            <option value="REQUEST_COUNT">request count</option>
          </SelectField>
          <NumberField
            label={scalingType === 'QUEUE_DELAY' ? 'Queue delay (s)' : 'Requests per worker'}
            min={scalingType === 'QUEUE_DELAY' ? 0.5 : 1}
            step={scalingType === 'QUEUE_DELAY' ? 0.5 : 1}
            value={scalingValue}
            onChange={setScalingValue}
          />
          <NumberField
            label="Job timeout (s)"
            hint="Default execution timeout of a job."
            min={5}
            value={timeoutSeconds}
            onChange={setTimeoutSeconds}
          />
        </div>
      </Section>

      <Section title="Storage and environment">
        {choices.volumes.length > 0 ? (
          <fieldset className="options">
            <legend>Network volumes</legend>
            {choices.volumes.map((v) => (
              <CheckOption
                key={v.id}
                checked={volumes.includes(v.id)}
                onChange={() => setVolumes(toggled(volumes, v.id))}
              >
                {v.name} ({v.size} GB, {v.dataCenter})
              </CheckOption>
            ))}
          </fieldset>
        ) : (
          <p className="hint">
            No network volume yet (<Link href="/network-volumes">create one</Link> to share files
            between workers).
          </p>
        )}
        <KeyValueEditor label="Environment variables" value={env} onChange={setEnv} />
      </Section>

      <ErrorMessage error={save.error} />
      <div className="form-actions">
        <button type="submit" className="button primary" disabled={save.busy}>
          {save.busy ? 'Saving…' : existing ? 'Save endpoint' : 'Create endpoint'}
        </button>
        <Link href={existing ? `/serverless/${existing.id}` : '/serverless'} className="button">
          Cancel
        </Link>
      </div>
    </ActionForm>
  )
}
