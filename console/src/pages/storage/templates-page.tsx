import { useState } from 'react'
import { ok } from '../../api/client'
import type { Template } from '../../api/types'
import { ActionForm } from '../../components/action-form'
import { CheckOption } from '../../components/choices'
import { ConfirmRowAction } from '../../components/confirm-button'
import {
  ContainerFields,
  containerSpecOf,
  type ContainerSpec,
} from '../../components/container-fields'
import { DataTable } from '../../components/data-table'
import { EmptyState } from '../../components/empty-state'
import { ErrorMessage } from '../../components/error-message'
import { portsOf } from '../../components/format'
import { envOf, KeyValueEditor, rowsOf } from '../../components/key-value-editor'
import { Page, Section } from '../../components/page'
import { ListView } from '../../components/resource-view'
import { useAction } from '../../hooks/use-action'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'

const LABELS: Record<keyof ContainerSpec, string> = {
  name: 'Template name',
  image: 'Template image',
  args: 'Template command',
  disk: 'Template disk (GB)',
  ports: 'Template ports',
}

/** Pod and serverless templates: image, command, disk, ports, env to start from. */
export function TemplatesPage() {
  const { api } = useSession()
  const templates = useResource(
    async (signal) => (await ok(api.GET('/v2/templates', { signal }))).templates,
    [api],
  )
  const [editing, setEditing] = useState<Template>()
  const remove = useAction(async (id: string) => {
    await ok(api.DELETE('/v2/templates/{id}', { params: { path: { id } } }))
    templates.reload()
  })
  return (
    <Page title="Templates">
      <Section title="Templates">
        <ErrorMessage error={remove.error} />
        <ListView
          resource={templates}
          what="templates"
          empty={<EmptyState title="No template yet." />}
        >
          {(list) => (
            <DataTable columns={['Name', 'For', 'Image', 'Disk', 'Ports']} actions>
              {list.map((t) => (
                <tr key={t.id}>
                  <td>
                    {t.name}
                    {t.public ? <span className="badge badge-idle">public</span> : null}
                  </td>
                  <td>{t.serverless ? 'serverless' : 'pods'}</td>
                  <td className="mono">{t.image}</td>
                  <td>{t.disk} GB</td>
                  <td>{t.ports.join(', ') || '—'}</td>
                  <td className="actions">
                    <button type="button" className="button small" onClick={() => setEditing(t)}>
                      Edit <span className="offscreen">{t.name}</span>
                    </button>
                    <ConfirmRowAction label="Delete" item={t} action={remove} />
                  </td>
                </tr>
              ))}
            </DataTable>
          )}
        </ListView>
      </Section>
      <Section title={editing ? `Edit ${editing.name}` : 'New template'}>
        <TemplateForm
          key={editing?.id ?? 'new'}
          template={editing}
          onSaved={() => {
            setEditing(undefined)
            templates.reload()
          }}
          onCancel={() => setEditing(undefined)}
        />
      </Section>
    </Page>
  )
}

function TemplateForm({
  template,
  onSaved,
  onCancel,
}: {
  template: Template | undefined
  onSaved: () => void
  onCancel: () => void
}) {
  const { api } = useSession()
  const [spec, setSpec] = useState(containerSpecOf(template))
  const [env, setEnv] = useState(rowsOf(template?.env))
  const [serverless, setServerless] = useState(template?.serverless ?? false)
  const save = useAction(async () => {
    const fields = {
      name: spec.name.trim(),
      image: spec.image.trim(),
      args: spec.args,
      disk: spec.disk,
      ports: portsOf(spec.ports),
      env: envOf(env),
    }
    if (template)
      await ok(
        api.PATCH('/v2/templates/{id}', { params: { path: { id: template.id } }, body: fields }),
      )
    else await ok(api.POST('/v2/templates', { body: { ...fields, serverless } }))
    onSaved()
  })
  return (
    <ActionForm
      label={template ? 'Edit template' : 'New template'}
      onSubmit={() => void save.run()}
    >
      <ContainerFields labels={LABELS} spec={spec} onChange={setSpec} />
      {template ? null : (
        <CheckOption checked={serverless} onChange={setServerless}>
          For serverless endpoints (otherwise for pods)
        </CheckOption>
      )}
      <KeyValueEditor label="Template environment" value={env} onChange={setEnv} />
      <ErrorMessage error={save.error} />
      <div className="form-actions">
        <button type="submit" className="button primary" disabled={save.busy}>
          {template ? 'Save template' : 'Create template'}
        </button>
        {template ? (
          <button type="button" className="button" onClick={onCancel}>
            Cancel
          </button>
        ) : null}
      </div>
    </ActionForm>
  )
}
