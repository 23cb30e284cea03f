import { NumberField, TextField } from './form-fields'

/** What a pod and a template both say of their container, as the form edits it. */
export interface ContainerSpec {
  name: string
  image: string
  args: string
  disk: number
  /** As typed: `8888/http, 22/tcp` (portsOf reads it). */
  ports: string
}

export const containerSpecOf = (
  source: { name: string; image: string; args: string; disk: number; ports: string[] } | undefined,
): ContainerSpec => ({
  name: source?.name ?? '',
  image: source?.image ?? '',
  args: source?.args ?? '',
  disk: source?.disk ?? 20,
  ports: source?.ports.join(', ') ?? '',
})

/** Name, image, command, disk and ports, labelled as the form names them. */
export function ContainerFields({
  labels,
  spec,
  onChange,
}: {
  labels: Record<keyof ContainerSpec, string>
  spec: ContainerSpec
  onChange: (spec: ContainerSpec) => void
}) {
  const set =
    <K extends keyof ContainerSpec>(key: K) =>
    (value: ContainerSpec[K]) =>
      onChange({ ...spec, [key]: value })
  return (
    <>
      <div className="row">
        <TextField label={labels.name} required value={spec.name} onChange={set('name')} />
        <TextField label={labels.image} required value={spec.image} onChange={set('image')} />
      </div>
      <TextField label={labels.args} mono value={spec.args} onChange={set('args')} />
      <div className="row">
        <NumberField label={labels.disk} min={1} value={spec.disk} onChange={set('disk')} />
        <TextField
          label={labels.ports}
          hint="Comma-separated port/protocol."
          mono
          value={spec.ports}
          onChange={set('ports')}
        />
      </div>
    </>
  )
}
