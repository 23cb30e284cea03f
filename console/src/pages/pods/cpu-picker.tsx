import type { CpuFlavor } from '../../api/types'
import { Field } from '../../components/field'
import { perHour } from '../../components/format'

/** A CPU flavor and how many vCPUs of it, with the price and memory that follow. */
export function CpuPicker({
  flavors,
  flavorId,
  vcpuCount,
  onChange,
}: {
  flavors: CpuFlavor[]
  flavorId: string
  vcpuCount: number
  onChange: (flavorId: string, vcpuCount: number) => void
}) {
  const flavor = flavors.find((f) => f.id === flavorId)
  return (
    <div className="row">
      <Field label="CPU flavor">
        {(props) => (
          <select
            {...props}
            value={flavorId}
            onChange={(event) => {
              const next = flavors.find((f) => f.id === event.target.value)
              onChange(event.target.value, next?.vcpuCounts[0] ?? 2)
            }}
          >
            {flavors.map((f) => (
              <option key={f.id} value={f.id}>
                {f.name} ({f.id}) · {perHour(f.price.securePerVcpu)} per vCPU · stock{' '}
                {f.availability}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field
        label="vCPUs"
        hint={
          flavor
            ? `${vcpuCount * flavor.ramGbPerVcpu} GB memory · ${perHour(vcpuCount * flavor.price.securePerVcpu)}`
            : undefined
        }
      >
        {(props) => (
          <select
            {...props}
            value={vcpuCount}
            onChange={(event) => onChange(flavorId, Number(event.target.value))}
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
  )
}
