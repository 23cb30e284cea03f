import { useState } from 'react'
import { ok } from '../../api/client'
import type { Host } from '../../api/types'
import { ActionForm } from '../../components/action-form'
import { ErrorMessage } from '../../components/error-message'
import { TextField } from '../../components/form-fields'
import { useAction } from '../../hooks/use-action'
import { useSession } from '../../session/session'

/** `pool=team-a, ib=true` as labels; a part without `=` is left for the server to refuse. */
export function labelsOfText(text: string): Record<string, string> {
  const labels: Record<string, string> = {}
  for (const part of text.split(',').map((p) => p.trim())) {
    if (part === '') continue
    const at = part.indexOf('=')
    if (at < 0) labels[part] = ''
    else labels[part.slice(0, at).trim()] = part.slice(at + 1).trim()
  }
  return labels
}

/** `pool=team-a, ib=true`; empty when there are none. */
export function labelsText(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ')
}

/**
 * A host added at runtime: its labels as one line to edit (docs/fleet.md, "Pools and labels").
 * Saving sends the labels as a merge patch: those left out are removed.
 */
export function HostLabelsForm({ host, onSaved }: { host: Host; onSaved: () => void }) {
  const { api } = useSession()
  const [text, setText] = useState<string>()
  const save = useAction(async () => {
    const wanted = labelsOfText(text ?? labelsText(host.labels))
    const removed = Object.keys(host.labels).filter((k) => !(k in wanted))
    const labels: Record<string, string | null> = { ...wanted }
    for (const key of removed) labels[key] = null
    await ok(
      api.PATCH('/v2/admin/hosts/{hostId}', {
        params: { path: { hostId: host.id } },
        body: { labels },
      }),
    )
    setText(undefined)
    onSaved()
  })
  return (
    <>
      <ActionForm
        className="form row"
        label={`Labels of ${host.id}`}
        onSubmit={() => void save.run()}
      >
        <TextField
          label="Labels"
          hint="key=value, comma-separated; pool=<name> reserves it."
          mono
          value={text ?? labelsText(host.labels)}
          onChange={setText}
          placeholder="pool=team-a, ib=true"
        />
        <button type="submit" className="button small" disabled={save.busy}>
          Save labels <span className="offscreen">{host.id}</span>
        </button>
      </ActionForm>
      <ErrorMessage error={save.error} />
    </>
  )
}
