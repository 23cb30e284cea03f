/** The `<option>`s of the selects that choose from the catalog and the account's things. */

export function DataCenterOptions({
  dataCenters,
}: {
  dataCenters: Array<{ id: string; name: string }>
}) {
  return dataCenters.map((dc) => (
    <option key={dc.id} value={dc.id}>
      {dc.id} · {dc.name}
    </option>
  ))
}

export function TemplateOptions({
  templates,
}: {
  templates: Array<{ id: string; name: string; image: string }>
}) {
  return templates.map((t) => (
    <option key={t.id} value={t.id}>
      {t.name} ({t.image})
    </option>
  ))
}

export function VolumeOptions({
  volumes,
}: {
  volumes: Array<{ id: string; name: string; size: number; dataCenter: string }>
}) {
  return volumes.map((v) => (
    <option key={v.id} value={v.id}>
      {v.name} ({v.size} GB, {v.dataCenter})
    </option>
  ))
}

/** vCPU counts (or any counts): each its own label. */
export function CountOptions({ counts }: { counts: number[] }) {
  return counts.map((count) => (
    <option key={count} value={count}>
      {count}
    </option>
  ))
}
