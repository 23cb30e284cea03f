import { useState } from 'react'
import { ok } from '../../api/client'
import type { AddHostInput } from '../../api/types'
import { ActionForm } from '../../components/action-form'
import { ErrorMessage } from '../../components/error-message'
import { Field } from '../../components/field'
import { SelectField, TextField } from '../../components/form-fields'
import { labelsOfText } from './host-labels'
import { useAction } from '../../hooks/use-action'
import { useSession } from '../../session/session'

type Access = 'simulated' | 'ssh' | 'tls'

/** A key or certificate file chosen here, read as text: it is sent, and sealed by the server. */
function FileTextField({
  label,
  hint,
  onChange,
}: {
  label: string
  hint?: string
  onChange: (text: string) => void
}) {
  return (
    <Field label={label} hint={hint}>
      {(props) => (
        <input
          {...props}
          type="file"
          onChange={(e) => {
            const file = e.target.files?.[0]
            if (!file) onChange('')
            else void file.text().then(onChange)
          }}
        />
      )}
    </Field>
  )
}

/** A whole number typed in a field, or undefined when it is empty (the server then says why). */
const whole = (text: string) => (text.trim() === '' ? undefined : Number(text))

/**
 * Adds a machine to the fleet of every replica (POST /v2/admin/hosts, as `podyard hosts add`):
 * its data center and capacity, and how its engine is reached: over SSH (a private key chosen
 * here and a known_hosts file on the server) or TCP with mutual TLS (the CA, certificate and
 * key chosen here), or simulated on this machine. Key and certificate files are read in the
 * browser and sent as text; the server seals them and never shows them again.
 */
export function AddHostForm({ onAdded }: { onAdded: () => void }) {
  const { api } = useSession()
  const [id, setId] = useState('')
  const [dataCenterId, setDataCenterId] = useState('')
  const [vcpus, setVcpus] = useState('')
  const [memoryGb, setMemoryGb] = useState('')
  const [cpuFlavors, setCpuFlavors] = useState('')
  const [gpuType, setGpuType] = useState('')
  const [gpuCount, setGpuCount] = useState('1')
  const [publicIp, setPublicIp] = useState('')
  const [labels, setLabels] = useState('')
  const [access, setAccess] = useState<Access>('ssh')
  const [url, setUrl] = useState('')
  const [sshKey, setSshKey] = useState('')
  const [knownHosts, setKnownHosts] = useState('')
  const [tlsCa, setTlsCa] = useState('')
  const [tlsCert, setTlsCert] = useState('')
  const [tlsKey, setTlsKey] = useState('')
  const [formKey, setFormKey] = useState(0)

  const add = useAction(async () => {
    // What is left empty is left out: the server names each field that is missing or wrong.
    const given = (field: string, value: string) => (value.trim() === '' ? {} : { [field]: value })
    const tls = [tlsCa, tlsCert, tlsKey].some((t) => t !== '')
    const engine =
      access === 'ssh'
        ? { url: url.trim(), ...given('sshKey', sshKey), ...given('knownHosts', knownHosts.trim()) }
        : { url: url.trim(), ...(tls ? { tls: { ca: tlsCa, cert: tlsCert, key: tlsKey } } : {}) }
    const body = {
      id: id.trim(),
      dataCenterId: dataCenterId.trim(),
      vcpus: whole(vcpus),
      memoryGb: whole(memoryGb),
      cpuFlavors: cpuFlavors
        .split(',')
        .map((f) => f.trim())
        .filter((f) => f !== ''),
      ...(gpuType.trim() === ''
        ? {}
        : { gpu: { typeId: gpuType.trim(), count: whole(gpuCount) ?? 1 } }),
      ...(publicIp.trim() === '' ? {} : { publicIp: publicIp.trim() }),
      ...(labels.trim() === '' ? {} : { labels: labelsOfText(labels) }),
      ...(access === 'simulated' ? { simulated: true } : { docker: engine }),
    } as AddHostInput
    await ok(api.POST('/v2/admin/hosts', { body }))
    for (const clear of [setId, setVcpus, setMemoryGb, setGpuType, setPublicIp, setUrl]) clear('')
    setLabels('')
    for (const clear of [setSshKey, setTlsCa, setTlsCert, setTlsKey]) clear('')
    // The file inputs are cleared by making them anew.
    setFormKey((k) => k + 1)
    onAdded()
  })

  return (
    <ActionForm label="Add a host" onSubmit={() => void add.run()}>
      <div className="row">
        <TextField label="Host ID" mono value={id} onChange={setId} placeholder="gpu-node-4" />
        <TextField
          label="Data center"
          mono
          value={dataCenterId}
          onChange={setDataCenterId}
          placeholder="EU-RO-1"
        />
        <TextField label="vCPUs" type="number" min={1} value={vcpus} onChange={setVcpus} />
        <TextField
          label="Memory (GB)"
          type="number"
          min={1}
          value={memoryGb}
          onChange={setMemoryGb}
        />
      </div>
      <div className="row">
        <TextField
          label="CPU flavors"
          hint="Comma-separated (cpu3c,cpu3g); for a CPU host."
          mono
          value={cpuFlavors}
          onChange={setCpuFlavors}
        />
        <TextField
          label="GPU type"
          hint="Empty: no GPU."
          value={gpuType}
          onChange={setGpuType}
          placeholder="NVIDIA GeForce RTX 4090"
        />
        <TextField label="GPUs" type="number" min={1} value={gpuCount} onChange={setGpuCount} />
        <TextField
          label="Public IP"
          hint="Where its pods' ports are reached."
          mono
          value={publicIp}
          onChange={setPublicIp}
        />
        <TextField
          label="Labels"
          hint="key=value, comma-separated; pool=<name> reserves it to that pool's accounts."
          mono
          value={labels}
          onChange={setLabels}
          placeholder="pool=team-a, ib=true"
        />
      </div>
      <SelectField label="Engine" value={access} onChange={(v) => setAccess(v as Access)}>
        <option value="ssh">its Docker engine over SSH</option>
        <option value="tls">its Docker engine over TCP with TLS</option>
        <option value="simulated">simulated, on this machine</option>
      </SelectField>
      {access === 'simulated' ? null : (
        <div className="row" key={`${access}-${formKey}`}>
          <TextField
            label="Engine URL"
            mono
            value={url}
            onChange={setUrl}
            placeholder={access === 'ssh' ? 'ssh://podyard@gpu-node-4' : 'tcp://gpu-node-4:2376'}
          />
          {access === 'ssh' ? (
            <>
              <FileTextField
                label="SSH private key"
                hint="Sent and stored encrypted; never shown again."
                onChange={setSshKey}
              />
              <TextField
                label="known_hosts file"
                hint="Its path on the server, the same on every replica."
                mono
                value={knownHosts}
                onChange={setKnownHosts}
                placeholder="/etc/podyard/ssh/known_hosts"
              />
            </>
          ) : (
            <>
              <FileTextField label="TLS CA certificate" onChange={setTlsCa} />
              <FileTextField label="TLS client certificate" onChange={setTlsCert} />
              <FileTextField
                label="TLS client key"
                hint="Sent and stored encrypted; never shown again."
                onChange={setTlsKey}
              />
            </>
          )}
        </div>
      )}
      <ErrorMessage error={add.error} />
      <button type="submit" className="button primary" disabled={add.busy}>
        Add host
      </button>
    </ActionForm>
  )
}
