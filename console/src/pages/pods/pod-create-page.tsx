import { useState } from 'react'
import { Link, useLocation } from 'wouter'
import { ok } from '../../api/client'
import type { CreatePodBody } from '../../api/types'
import { ActionForm } from '../../components/action-form'
import { DataCenterOptions, TemplateOptions, VolumeOptions } from '../../components/catalog-options'
import { CheckOption, ChoiceGroup } from '../../components/choices'
import { ErrorMessage } from '../../components/error-message'
import { NumberField, SelectField, TextField } from '../../components/form-fields'
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
type Cloud = 'SECURE' | 'COMMUNITY'

/** The form's container disk (GB) without a template. */
const DEFAULT_DISK = 20
const TEMPLATES_OWN = 'Leave empty to use the template’s.'

/** Deploy a pod: a GPU of the catalog or a CPU flavor, a template or an image, storage, ports, env. */
export function PodCreatePage() {
  const { api } = useSession()
  const [, navigate] = useLocation()
  const [cloud, setCloud] = useState<Cloud>('SECURE')
  const catalog = useResource(
    async (signal) => {
      const [gpus, cpus, dataCenters, templates, volumes] = await Promise.all([
        ok(
          api.GET('/v2/catalog/gpus', {
            params: { query: { include: ['AVAILABILITY'], cloud } },
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
  // What the user typed: undefined until they type in the field, which shows the template's
  // value meanwhile (or the form's default without a template), and follows another template.
  const [image, setImage] = useState<string>()
  const [args, setArgs] = useState<string>()
  const [disk, setDisk] = useState<string>()
  const [ports, setPorts] = useState<string>()
  const [startSsh, setStartSsh] = useState<boolean>()
  const [compute, setCompute] = useState<'gpu' | 'cpu'>('gpu')
  const [gpuId, setGpuId] = useState('')
  const [gpuCount, setGpuCount] = useState(1)
  const [cpu, setCpu] = useState<{ id: string; vcpuCount: number }>()
  const [dataCenterId, setDataCenterId] = useState('')
  const [volume, setVolume] = useState<Volume>('none')
  const [persistentSize, setPersistentSize] = useState(20)
  const [mountPath, setMountPath] = useState('/workspace')
  const [volumeId, setVolumeId] = useState('')
  const [env, setEnv] = useState<Array<[string, string]>>([])

  const template = catalog.data?.templates.find((t) => t.id === templateId)
  const shown = {
    image: image ?? template?.image ?? '',
    args: args ?? template?.args ?? '',
    disk: disk ?? String(template?.disk ?? DEFAULT_DISK),
    ports: ports ?? template?.ports.join(', ') ?? '',
    startSsh: startSsh ?? template?.startSsh ?? false,
  }

  const create = useAction(async (body: CreatePodBody) => {
    const pod = await ok(api.POST('/v2/pods', { body }))
    navigate(`/pods/${pod.id}`)
  })

  const submit = () => {
    const flavors = catalog.data?.cpus ?? []
    const chosenCpu =
      cpu ??
      (flavors[0] ? { id: flavors[0].id, vcpuCount: flavors[0].vcpuCounts[0] ?? 2 } : undefined)
    // The pod gets what the form shows. A field left empty is left out of the body, so the
    // template's value holds (or the API's default), as with the REST API and the CLI; `env`
    // is merged with the template's by the API.
    const portList = portsOf(shown.ports)
    const body: CreatePodBody = {
      name: name.trim(),
      ...(shown.image.trim() ? { image: shown.image.trim() } : {}),
      ...(templateId ? { templateId } : {}),
      ...(shown.args.trim() ? { args: shown.args } : {}),
      ...(shown.disk.trim() ? { disk: Number(shown.disk) } : {}),
      ...(portList.length > 0 ? { ports: portList } : {}),
      env: envOf(env),
      cloud,
      ...(dataCenterId ? { dataCenterIds: [dataCenterId] } : {}),
      ...(shown.startSsh || template?.startSsh ? { startSsh: shown.startSsh } : {}),
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
            <ActionForm label="Deploy a pod" onSubmit={submit}>
              <Section title="Pod">
                <div className="row">
                  <TextField label="Name" required value={name} onChange={setName} />
                  <SelectField
                    label="Template"
                    hint="Fills in its image, command, disk, ports and SSH choice, which you may change; its env and volume come too."
                    value={templateId}
                    onChange={setTemplateId}
                  >
                    <option value="">none</option>
                    <TemplateOptions templates={data.templates} />
                  </SelectField>
                </div>
                <div className="row">
                  <TextField
                    label="Image"
                    hint={template ? TEMPLATES_OWN : 'e.g. runpod/pytorch'}
                    required={!template}
                    placeholder={template?.image}
                    value={shown.image}
                    onChange={setImage}
                  />
                  <TextField
                    label="Command"
                    hint={
                      template
                        ? `Run through /bin/sh -c. ${TEMPLATES_OWN}`
                        : 'Run through /bin/sh -c; empty runs the image’s own.'
                    }
                    mono
                    placeholder={template?.args || undefined}
                    value={shown.args}
                    onChange={setArgs}
                  />
                </div>
              </Section>

              <Section title="Compute">
                <ChoiceGroup
                  legend="Kind"
                  name="compute"
                  value={compute}
                  choices={[
                    ['gpu', 'GPU'],
                    ['cpu', 'CPU'],
                  ]}
                  onChange={setCompute}
                />
                {compute === 'gpu' ? (
                  <>
                    <div className="row">
                      <SelectField
                        label="Cloud"
                        value={cloud}
                        onChange={(value) => setCloud(value as Cloud)}
                      >
                        <option value="SECURE">Secure cloud</option>
                        <option value="COMMUNITY">Community cloud</option>
                      </SelectField>
                      <NumberField
                        label="GPU count"
                        min={1}
                        max={8}
                        value={gpuCount}
                        onChange={setGpuCount}
                      />
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
                <SelectField
                  label="Data center"
                  hint="Empty lets the scheduler choose."
                  value={dataCenterId}
                  onChange={setDataCenterId}
                >
                  <option value="">any</option>
                  <DataCenterOptions dataCenters={data.dataCenters} />
                </SelectField>
              </Section>

              <Section title="Storage">
                <div className="row">
                  <TextField
                    type="number"
                    label="Container disk (GB)"
                    hint={
                      template
                        ? `Emptied at every start. ${TEMPLATES_OWN}`
                        : 'Emptied at every start.'
                    }
                    required={!template}
                    min={1}
                    placeholder={template ? String(template.disk) : undefined}
                    value={shown.disk}
                    onChange={setDisk}
                  />
                  <SelectField
                    label="Volume"
                    value={volume}
                    onChange={(value) => setVolume(value as Volume)}
                  >
                    <option value="none">
                      {template?.mounts.persistent && compute === 'gpu'
                        ? `the template’s (${template.mounts.persistent.size} GB at ${template.mounts.persistent.path})`
                        : 'none'}
                    </option>
                    {compute === 'gpu' ? (
                      <option value="persistent">persistent volume on the host</option>
                    ) : null}
                    <option value="network">network volume</option>
                  </SelectField>
                </div>
                {volume !== 'none' ? (
                  <div className="row">
                    {volume === 'persistent' ? (
                      <NumberField
                        label="Volume size (GB)"
                        min={10}
                        value={persistentSize}
                        onChange={setPersistentSize}
                      />
                    ) : (
                      <SelectField
                        label="Network volume"
                        hint="The pod runs in the volume’s data center."
                        required
                        value={volumeId}
                        onChange={setVolumeId}
                      >
                        <option value="">choose…</option>
                        <VolumeOptions volumes={data.volumes} />
                      </SelectField>
                    )}
                    <TextField label="Mount path" mono value={mountPath} onChange={setMountPath} />
                  </div>
                ) : null}
              </Section>

              <Section title="Network and environment">
                <TextField
                  label="Ports"
                  hint={`Comma-separated port/protocol, e.g. 8888/http, 22/tcp.${template ? ` ${TEMPLATES_OWN}` : ''}`}
                  mono
                  placeholder={template?.ports.join(', ') || undefined}
                  value={shown.ports}
                  onChange={setPorts}
                />
                <CheckOption checked={shown.startSsh} onChange={setStartSsh}>
                  Put my SSH keys in the pod (PUBLIC_KEY)
                </CheckOption>
                <KeyValueEditor label="Environment variables" value={env} onChange={setEnv} />
                {template && Object.keys(template.env).length > 0 ? (
                  <p className="hint">
                    The template’s variables come too ({Object.keys(template.env).join(', ')}); one
                    set here replaces the template’s of the same name.
                  </p>
                ) : null}
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
            </ActionForm>
          )
        }}
      </ResourceView>
    </Page>
  )
}
