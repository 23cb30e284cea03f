import { useState, type FormEvent } from 'react'
import { Link, useLocation } from 'wouter'
import { ok } from '../../api/client'
import type { CreatePodBody } from '../../api/types'
import { ErrorMessage } from '../../components/error-message'
import { Field } from '../../components/field'
import { portsOf } from '../../components/format'
import { envOf, KeyValueEditor } from '../../components/key-value-editor'
import { Page, Section } from '../../components/page'
import { ResourceView } from '../../components/resource-view'
import { useAction } from '../../hooks/use-action'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'
import { CpuPicker } from './cpu-picker'
import { GpuPicker } from './gpu-picker'

type Volume = 'none' | 'persistent' | 'network'

/** Deploy a pod: a GPU of the catalog or a CPU flavor, a template or an image, storage, ports, env. */
export function PodCreatePage() {
  const { api } = useSession()
  const [, navigate] = useLocation()
  const [cloud, setCloud] = useState<'SECURE' | 'COMMUNITY'>('SECURE')
  const catalog = useResource(
    async (signal) => {
      const [gpus, cpus, dataCenters, templates, volumes] = await Promise.all([
        ok(
          api.GET('/v2/catalog/gpus', {
            params: { query: { include: 'AVAILABILITY', cloud } },
            signal,
          }),
        ),
        ok(api.GET('/v2/catalog/cpus', { signal })),
        ok(api.GET('/v2/catalog/datacenters', { signal })),
        ok(api.GET('/v2/templates', { signal })),
        ok(api.GET('/v2/network-volumes', { signal })),
      ])
      return {
        gpus: gpus.gpus,
        cpus: cpus.cpus,
        dataCenters: dataCenters.dataCenters,
        templates: templates.templates.filter((t) => !t.serverless),
        volumes: volumes.networkVolumes,
      }
    },
    [api, cloud],
  )

  const [name, setName] = useState('')
  const [templateId, setTemplateId] = useState('')
  const [image, setImage] = useState('')
  const [args, setArgs] = useState('')
  const [compute, setCompute] = useState<'gpu' | 'cpu'>('gpu')
  const [gpuId, setGpuId] = useState('')
  const [gpuCount, setGpuCount] = useState(1)
  const [cpu, setCpu] = useState<{ id: string; vcpuCount: number }>()
  const [dataCenterId, setDataCenterId] = useState('')
  const [disk, setDisk] = useState(20)
  const [volume, setVolume] = useState<Volume>('none')
  const [persistentSize, setPersistentSize] = useState(20)
  const [mountPath, setMountPath] = useState('/workspace')
  const [volumeId, setVolumeId] = useState('')
  const [ports, setPorts] = useState('')
  const [env, setEnv] = useState<Array<[string, string]>>([])
  const [startSsh, setStartSsh] = useState(false)

  const create = useAction(async (body: CreatePodBody) => {
    const pod = await ok(api.POST('/v2/pods', { body }))
    navigate(`/pods/${pod.id}`)
  })

  const submit = (event: FormEvent) => {
    event.preventDefault()
    const flavors = catalog.data?.cpus ?? []
    const chosenCpu =
      cpu ??
      (flavors[0] ? { id: flavors[0].id, vcpuCount: flavors[0].vcpuCounts[0] ?? 2 } : undefined)
    const body: CreatePodBody = {
      name: name.trim(),
      ...(image.trim() ? { image: image.trim() } : {}),
      ...(templateId ? { templateId } : {}),
      ...(args.trim() ? { args } : {}),
      disk,
      ports: portsOf(ports),
      env: envOf(env),
      cloud,
      ...(dataCenterId ? { dataCenterIds: [dataCenterId] } : {}),
      ...(startSsh ? { startSsh: true } : {}),
      ...(compute === 'gpu'
        ? { gpu: { id: gpuId, count: gpuCount } }
        : chosenCpu
          ? { cpu: chosenCpu }
          : {}),
      ...(volume === 'persistent'
        ? { mounts: { persistent: { size: persistentSize, path: mountPath } } }
        : {}),
      ...(volume === 'network' ? { mounts: { network: [{ volumeId, path: mountPath }] } } : {}),
    } as CreatePodBody
    void create.run(body)
  }

  return (
    <Page title="Deploy a pod">
      <ResourceView resource={catalog} what="the catalog">
        {(data) => {
          const flavor =
            cpu ??
            (data.cpus[0]
              ? { id: data.cpus[0].id, vcpuCount: data.cpus[0].vcpuCounts[0] ?? 2 }
              : undefined)
          return (
            <form onSubmit={submit} className="form" aria-label="Deploy a pod">
              <Section title="Pod">
                <div className="row">
                  <Field label="Name">
                    {(props) => (
                      <input
                        {...props}
                        required
                        value={name}
                        onChange={(e) => setName(e.target.value)}
                      />
                    )}
                  </Field>
                  <Field
                    label="Template"
                    hint="Its image, command, disk, ports and env become the defaults."
                  >
                    {(props) => (
                      <select
                        {...props}
                        value={templateId}
                        onChange={(e) => setTemplateId(e.target.value)}
                      >
                        <option value="">none</option>
                        {data.templates.map((t) => (
                          <option key={t.id} value={t.id}>
                            {t.name} ({t.image})
                          </option>
                        ))}
                      </select>
                    )}
                  </Field>
                </div>
                <div className="row">
                  <Field
                    label="Image"
                    hint={templateId ? 'Leave empty to use the template’s.' : 'e.g. runpod/pytorch'}
                  >
                    {(props) => (
                      <input
                        {...props}
                        required={!templateId}
                        value={image}
                        onChange={(e) => setImage(e.target.value)}
                      />
                    )}
                  </Field>
                  <Field label="Command" hint="Run through /bin/sh -c; empty runs the image’s own.">
                    {(props) => (
                      <input
                        {...props}
                        className="mono"
                        value={args}
                        onChange={(e) => setArgs(e.target.value)}
                      />
                    )}
                  </Field>
                </div>
              </Section>

              <Section title="Compute">
                <fieldset className="choices">
                  <legend>Kind</legend>
                  <label className="check">
                    <input
                      type="radio"
                      name="compute"
                      checked={compute === 'gpu'}
                      onChange={() => setCompute('gpu')}
                    />
                    GPU
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
                {compute === 'gpu' ? (
                  <>
                    <div className="row">
                      <Field label="Cloud">
                        {(props) => (
                          <select
                            {...props}
                            value={cloud}
                            onChange={(e) => setCloud(e.target.value as 'SECURE' | 'COMMUNITY')}
                          >
                            <option value="SECURE">Secure cloud</option>
                            <option value="COMMUNITY">Community cloud</option>
                          </select>
                        )}
                      </Field>
                      <Field label="GPU count">
                        {(props) => (
                          <input
                            {...props}
                            type="number"
                            min={1}
                            max={8}
                            value={gpuCount}
                            onChange={(e) => setGpuCount(Number(e.target.value))}
                          />
                        )}
                      </Field>
                    </div>
                    <GpuPicker gpus={data.gpus} cloud={cloud} value={gpuId} onChange={setGpuId} />
                  </>
                ) : flavor ? (
                  <CpuPicker
                    flavors={data.cpus}
                    flavorId={flavor.id}
                    vcpuCount={flavor.vcpuCount}
                    onChange={(id, vcpuCount) => setCpu({ id, vcpuCount })}
                  />
                ) : (
                  <p>The catalog has no CPU flavor.</p>
                )}
                <Field label="Data center" hint="Empty lets the scheduler choose.">
                  {(props) => (
                    <select
                      {...props}
                      value={dataCenterId}
                      onChange={(e) => setDataCenterId(e.target.value)}
                    >
                      <option value="">any</option>
                      {data.dataCenters.map((dc) => (
                        <option key={dc.id} value={dc.id}>
                          {dc.id} · {dc.name}
                        </option>
                      ))}
                    </select>
                  )}
                </Field>
              </Section>

              <Section title="Storage">
                <div className="row">
                  <Field label="Container disk (GB)" hint="Emptied at every start.">
                    {(props) => (
                      <input
                        {...props}
                        type="number"
                        min={1}
                        value={disk}
                        onChange={(e) => setDisk(Number(e.target.value))}
                      />
                    )}
                  </Field>
                  <Field label="Volume">
                    {(props) => (
                      <select
                        {...props}
                        value={volume}
                        onChange={(e) => setVolume(e.target.value as Volume)}
                      >
                        <option value="none">none</option>
                        {compute === 'gpu' ? (
                          <option value="persistent">persistent volume on the host</option>
                        ) : null}
                        <option value="network">network volume</option>
                      </select>
                    )}
                  </Field>
                </div>
                {volume !== 'none' ? (
                  <div className="row">
                    {volume === 'persistent' ? (
                      <Field label="Volume size (GB)">
                        {(props) => (
                          <input
                            {...props}
                            type="number"
                            min={10}
                            value={persistentSize}
                            onChange={(e) => setPersistentSize(Number(e.target.value))}
                          />
                        )}
                      </Field>
                    ) : (
                      <Field
                        label="Network volume"
                        hint="The pod runs in the volume’s data center."
                      >
                        {(props) => (
                          <select
                            {...props}
                            required
                            value={volumeId}
                            onChange={(e) => setVolumeId(e.target.value)}
                          >
                            <option value="">choose…</option>
                            {data.volumes.map((v) => (
                              <option key={v.id} value={v.id}>
                                {v.name} ({v.size} GB, {v.dataCenter})
                              </option>
                            ))}
                          </select>
                        )}
                      </Field>
                    )}
                    <Field label="Mount path">
                      {(props) => (
                        <input
                          {...props}
                          className="mono"
                          value={mountPath}
                          onChange={(e) => setMountPath(e.target.value)}
                        />
                      )}
                    </Field>
                  </div>
                ) : null}
              </Section>

              <Section title="Network and environment">
                <Field label="Ports" hint="Comma-separated port/protocol, e.g. 8888/http, 22/tcp.">
                  {(props) => (
                    <input
                      {...props}
                      className="mono"
                      value={ports}
                      onChange={(e) => setPorts(e.target.value)}
                    />
                  )}
                </Field>
                <label className="check">
                  <input
                    type="checkbox"
                    checked={startSsh}
                    onChange={(e) => setStartSsh(e.target.checked)}
                  />
                  Put my SSH keys in the pod (PUBLIC_KEY)
                </label>
                <KeyValueEditor label="Environment variables" value={env} onChange={setEnv} />
              </Section>

              <ErrorMessage error={create.error} />
              <div className="form-actions">
                <button
                  type="submit"
                  className="button primary"
                  disabled={create.busy || (compute === 'gpu' && !gpuId)}
                >
                  {create.busy ? 'Deploying…' : 'Deploy pod'}
                </button>
                <Link href="/pods" className="button">
                  Cancel
                </Link>
              </div>
            </form>
          )
        }}
      </ResourceView>
    </Page>
  )
}
