import { useState, type FormEvent } from 'react'
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
import { ErrorMessage } from '../../components/error-message'
import { Field } from '../../components/field'
import { perHour } from '../../components/format'
import { envOf, KeyValueEditor, rowsOf } from '../../components/key-value-editor'
import { Page, Section } from '../../components/page'
import { ResourceView } from '../../components/resource-view'
import { useAction } from '../../hooks/use-action'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'

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
        ok(api.GET('/v2/catalog/gpus', { params: { query: { product: 'SERVERLESS' } }, signal })),
        ok(api.GET('/v2/catalog/cpus', { params: { query: { product: 'SERVERLESS' } }, signal })),
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
    if (gpu.price.serverless !== null)
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
  const [scalingType, setScalingType] = useState<'QUEUE_DELAY' | 'REQUEST_COUNT'>(
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

  const submit = (event: FormEvent) => {
    event.preventDefault()
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

  const toggle = (list: string[], set: (next: string[]) => void, value: string) =>
    set(list.includes(value) ? list.filter((v) => v !== value) : [...list, value])
  const flavor = choices.cpus.find((f) => f.id === cpuId)

  return (
    <form
      className="form"
      onSubmit={submit}
      aria-label={existing ? 'Edit endpoint' : 'New endpoint'}
    >
      <Section title="Endpoint">
        <Field label="Name">
          {(props) => (
            <input {...props} required value={name} onChange={(e) => setName(e.target.value)} />
          )}
        </Field>
        <fieldset className="choices">
          <legend>Workers run</legend>
          <label className="check">
            <input
              type="radio"
              name="source"
              checked={source === 'image'}
              onChange={() => setSource('image')}
            />
            an image
          </label>
          <label className="check">
            <input
              type="radio"
              name="source"
              checked={source === 'template'}
              onChange={() => setSource('template')}
            />
            a serverless template
          </label>
        </fieldset>
        {source === 'image' ? (
          <Field label="Image">
            {(props) => (
              <input {...props} required value={image} onChange={(e) => setImage(e.target.value)} />
            )}
          </Field>
        ) : (
          <Field label="Template">
            {(props) => (
              <select
                {...props}
                required
                value={templateId}
                onChange={(e) => setTemplateId(e.target.value)}
              >
                <option value="">choose…</option>
                {choices.templates.map((t) => (
                  <option key={t.id} value={t.id}>
                    {t.name} ({t.image})
                  </option>
                ))}
              </select>
            )}
          </Field>
        )}
        <Field
          label="Command"
          hint="Run through /bin/sh -c in each worker; empty runs the image’s own."
        >
          {(props) => (
            <input
              {...props}
              className="mono"
              value={args}
              onChange={(e) => setArgs(e.target.value)}
            />
          )}
        </Field>
      </Section>

      <Section title="Compute">
        {existing ? (
          <p className="hint">The compute type is fixed when the endpoint is created.</p>
        ) : (
          <fieldset className="choices">
            <legend>Kind</legend>
            <label className="check">
              <input
                type="radio"
                name="compute"
                checked={compute === 'gpu'}
                onChange={() => setCompute('gpu')}
              />
              GPU pools
            </label>
            <label className="check">
              <input
                type="radio"
                name="compute"
                checked={compute === 'cpu'}
                onChange={() => setCompute('cpu')}
              />
              CPU
            </label>
          </fieldset>
        )}
        {compute === 'gpu' ? (
          <>
            <fieldset className="options">
              <legend>GPU pools</legend>
              {poolsOf(choices.gpus).map(([pool, info]) => (
                <label key={pool} className="check">
                  <input
                    type="checkbox"
                    checked={pools.includes(pool)}
                    onChange={() => toggle(pools, setPools, pool)}
                  />
                  <span>
                    <strong>{pool}</strong> {info.names.join(', ')} · from {perHour(info.price)}
                  </span>
                </label>
              ))}
            </fieldset>
            <Field label="GPUs per worker">
              {(props) => (
                <input
                  {...props}
                  type="number"
                  min={1}
                  value={gpuCount}
                  onChange={(e) => setGpuCount(Number(e.target.value))}
                />
              )}
            </Field>
          </>
        ) : (
          <div className="row">
            <Field label="CPU flavor">
              {(props) => (
                <select {...props} value={cpuId} onChange={(e) => setCpuId(e.target.value)}>
                  {choices.cpus.map((f) => (
                    <option key={f.id} value={f.id}>
                      {f.name} ({f.id}) · {perHour(f.price.serverlessPerVcpu)} per vCPU
                    </option>
                  ))}
                </select>
              )}
            </Field>
            <Field label="vCPUs per worker">
              {(props) => (
                <select
                  {...props}
                  value={vcpuCount}
                  onChange={(e) => setVcpuCount(Number(e.target.value))}
                >
                  {(flavor?.vcpuCounts ?? []).map((count) => (
                    <option key={count} value={count}>
                      {count}
                    </option>
                  ))}
                </select>
              )}
            </Field>
          </div>
        )}
      </Section>

      <Section title="Scaling">
        <div className="row">
          <Field label="Workers min">
            {(props) => (
              <input
                {...props}
                type="number"
                min={0}
                max={100}
                value={min}
                onChange={(e) => setMin(Number(e.target.value))}
              />
            )}
          </Field>
          <Field label="Workers max">
            {(props) => (
              <input
                {...props}
                type="number"
                min={0}
                max={100}
                value={max}
                onChange={(e) => setMax(Number(e.target.value))}
              />
            )}
          </Field>
          {scalingType === 'QUEUE_DELAY' ? (
            <Field label="Idle timeout (s)" hint="How long an idle worker stays.">
              {(props) => (
                <input
                  {...props}
                  type="number"
                  min={1}
                  max={3600}
                  value={idleTimeout}
                  onChange={(e) => setIdleTimeout(Number(e.target.value))}
                />
              )}
            </Field>
          ) : null}
        </div>
        <div className="row">
          <Field label="Scale by">
            {(props) => (
              <select
                {...props}
                value={scalingType}
                onChange={(e) => setScalingType(e.target.value as 'QUEUE_DELAY' | 'REQUEST_COUNT')}
              >
                <option value="QUEUE_DELAY">queue delay</option>
                <option value="REQUEST_COUNT">request count</option>
              </select>
            )}
          </Field>
          <Field label={scalingType === 'QUEUE_DELAY' ? 'Queue delay (s)' : 'Requests per worker'}>
            {(props) => (
              <input
                {...props}
                type="number"
                min={scalingType === 'QUEUE_DELAY' ? 0.5 : 1}
                step={scalingType === 'QUEUE_DELAY' ? 0.5 : 1}
                value={scalingValue}
                onChange={(e) => setScalingValue(Number(e.target.value))}
              />
            )}
          </Field>
          <Field label="Job timeout (s)" hint="Default execution timeout of a job.">
            {(props) => (
              <input
                {...props}
                type="number"
                min={5}
                value={timeoutSeconds}
                onChange={(e) => setTimeoutSeconds(Number(e.target.value))}
              />
            )}
          </Field>
        </div>
      </Section>

      <Section title="Storage and environment">
        {choices.volumes.length > 0 ? (
          <fieldset className="options">
            <legend>Network volumes</legend>
            {choices.volumes.map((v) => (
              <label key={v.id} className="check">
                <input
                  type="checkbox"
                  checked={volumes.includes(v.id)}
                  onChange={() => toggle(volumes, setVolumes, v.id)}
                />
                {v.name} ({v.size} GB, {v.dataCenter})
              </label>
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
    </form>
  )
}
