import type { CpuFlavor } from '../../api/types'
import { CountOptions } from '../../components/catalog-options'
import { SelectField } from '../../components/form-fields'
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
      <SelectField
        label="CPU flavor"
        value={flavorId}
        onChange={(id) => {
          const next = flavors.find((f) => f.id === id)
          onChange(id, next?.vcpuCounts[0] ?? 2)
        }}
      >
        {flavors.map((f) => (
          <option key={f.id} value={f.id}>
            {f.name} ({f.id}) · {perHour(f.price.securePerVcpu)} per vCPU · stock {f.availability}
          </option>
        ))}
      </SelectField>
      <SelectField
        label="vCPUs"
        hint={
          flavor
            ? `${vcpuCount * flavor.ramGbPerVcpu} GB memory · ${perHour(vcpuCount * flavor.price.securePerVcpu)}`
            : undefined
        }
        value={vcpuCount}
        onChange={(count) => onChange(flavorId, Number(count))}
      >
        <CountOptions counts={flavor?.vcpuCounts ?? []} />
      </SelectField>
    </div>
  )
}
