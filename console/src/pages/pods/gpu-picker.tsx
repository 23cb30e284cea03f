import type { GpuType } from '../../api/types'
import { perHour } from '../../components/format'

/**
 * The GPU types of the catalog as a radio table: price in the chosen cloud, stock, the data
 * centers that have it now and the CUDA versions of their hosts.
 */
export function GpuPicker({
  gpus,
  cloud,
  value,
  onChange,
}: {
  gpus: GpuType[]
  cloud: 'SECURE' | 'COMMUNITY'
  value: string
  onChange: (id: string) => void
}) {
  const offered = gpus.filter((gpu) => (cloud === 'SECURE' ? gpu.secure : gpu.community))
  if (offered.length === 0) return <p>No GPU type is offered in the {cloud} cloud.</p>
  return (
    <table className="picker">
      <caption className="offscreen">GPU types in the {cloud} cloud</caption>
      <thead>
        <tr>
          <th scope="col">GPU</th>
          <th scope="col">Memory</th>
          <th scope="col">Price</th>
          <th scope="col">Stock</th>
          <th scope="col">Data centers</th>
          <th scope="col">CUDA</th>
        </tr>
      </thead>
      <tbody>
        {offered.map((gpu) => {
          const price = cloud === 'SECURE' ? gpu.price.secure : gpu.price.community
          const centers = (gpu.dataCenters ?? []).filter((dc) => dc.availability !== 'NONE')
          const cuda = (gpu.cudaVersions ?? []).filter((v) => v.available).map((v) => v.version)
          return (
            <tr key={gpu.id} className={value === gpu.id ? 'selected' : undefined}>
              <td>
                <label className="check">
                  <input
                    type="radio"
                    name="gpu-type"
                    value={gpu.id}
                    checked={value === gpu.id}
                    onChange={() => onChange(gpu.id)}
                  />
                  {gpu.name}
                </label>
              </td>
              <td>{gpu.memory} GB</td>
              <td>{perHour(price)}</td>
              <td>{gpu.availability}</td>
              <td>{centers.length > 0 ? centers.map((dc) => dc.id).join(', ') : 'none free'}</td>
              <td>{cuda.length > 0 ? cuda.join(', ') : '—'}</td>
            </tr>
          )
        })}
      </tbody>
    </table>
  )
}
