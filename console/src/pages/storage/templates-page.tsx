import { useState, type FormEvent } from 'react'
import { ok } from '../../api/client'
import type { Template } from '../../api/types'
import { ConfirmButton } from '../../components/confirm-button'
import { EmptyState } from '../../components/empty-state'
import { ErrorMessage } from '../../components/error-message'
import { Field } from '../../components/field'
import { portsOf } from '../../components/format'
import { envOf, KeyValueEditor, rowsOf } from '../../components/key-value-editor'
import { Page, Section } from '../../components/page'
import { ResourceView } from '../../components/resource-view'
import { useAction } from '../../hooks/use-action'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'

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
        <ResourceView resource={templates} what="templates">
          {(list) =>
            list.length === 0 ? (
              <EmptyState title="No template yet." />
            ) : (
              <table>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">For</th>
                    <th scope="col">Image</th>
                    <th scope="col">Disk</th>
                    <th scope="col">Ports</th>
                    <th scope="col">
                      <span className="offscreen">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
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
                        <button
                          type="button"
                          className="button small"
                          onClick={() => setEditing(t)}
                        >
                          Edit <span className="offscreen">{t.name}</span>
                        </button>
                        <ConfirmButton
                          label="Delete"
                          subject={t.name}
                          busy={remove.busy}
                          onConfirm={() => void remove.run(t.id)}
                        />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )
          }
        </ResourceView>
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
  const [name, setName] = useState(template?.name ?? '')
  const [image, setImage] = useState(template?.image ?? '')
  const [args, setArgs] = useState(template?.args ?? '')
  const [disk, setDisk] = useState(template?.disk ?? 20)
  const [ports, setPorts] = useState(template?.ports.join(', ') ?? '')
  const [env, setEnv] = useState(rowsOf(template?.env))
  const [serverless, setServerless] = useState(template?.serverless ?? false)
  const save = useAction(async () => {
    const fields = {
      name: name.trim(),
      image: image.trim(),
      args,
      disk,
      ports: portsOf(ports),
      env: envOf(env),
    }
    if (template)
      await ok(
        api.PATCH('/v2/templates/{id}', { params: { path: { id: template.id } }, body: fields }),
      )
    else await ok(api.POST('/v2/templates', { body: { ...fields, serverless } }))
    onSaved()
  })
  const submit = (event: FormEvent) => {
    event.preventDefault()
    void save.run()
  }
  return (
    <form
      className="form"
      onSubmit={submit}
      aria-label={template ? 'Edit template' : 'New template'}
    >
      <div className="row">
        <Field label="Template name">
          {(props) => (
            <input {...props} required value={name} onChange={(e) => setName(e.target.value)} />
          )}
        </Field>
        <Field label="Template image">
          {(props) => (
            <input {...props} required value={image} onChange={(e) => setImage(e.target.value)} />
          )}
        </Field>
      </div>
      <Field label="Template command">
        {(props) => (
          <input
            {...props}
            className="mono"
            value={args}
            onChange={(e) => setArgs(e.target.value)}
          />
        )}
      </Field>
      <div className="row">
        <Field label="Template disk (GB)">
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
        <Field label="Template ports" hint="Comma-separated port/protocol.">
          {(props) => (
            <input
              {...props}
              className="mono"
              value={ports}
              onChange={(e) => setPorts(e.target.value)}
            />
          )}
        </Field>
      </div>
      {template ? null : (
        <label className="check">
          <input
            type="checkbox"
            checked={serverless}
            onChange={(e) => setServerless(e.target.checked)}
          />
          For serverless endpoints (otherwise for pods)
        </label>
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
    </form>
  )
}
