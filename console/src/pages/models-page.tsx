import { useState, type FormEvent } from 'react'
import { jobApi, type JobView } from '../api/job-api'
import { modelsApi, type PublicModel } from '../api/models-api'
import { EmptyState } from '../components/empty-state'
import { ErrorMessage } from '../components/error-message'
import { Field } from '../components/field'
import { usd } from '../components/format'
import { Page, Section } from '../components/page'
import { ResourceView } from '../components/resource-view'
import { useAction } from '../hooks/use-action'
import { useResource } from '../hooks/use-resource'
import { useSession } from '../session/session'

/** Public models: what they are, what they cost, and a form to try one. */
export function ModelsPage() {
  const { raw } = useSession()
  const models = useResource(() => modelsApi.list(raw), [raw])
  return (
    <Page title="Public models">
      <ResourceView resource={models} what="models">
        {(list) =>
          list.length === 0 ? (
            <EmptyState title="This podyard offers no public model." />
          ) : (
            list.map((model) => <ModelCard key={model.id} model={model} />)
          )
        }
      </ResourceView>
    </Page>
  )
}

/**
 * A signed result URL of this server names the address it listens on, which may not be the
 * one the browser used (a host name, a proxy): the path and query are what count, so the
 * image is loaded from the console's own origin.
 */
function sameOrigin(url: string): string {
  try {
    const parsed = new URL(url)
    return parsed.pathname.startsWith('/v2/objects/') ? `${parsed.pathname}${parsed.search}` : url
  } catch {
    return url
  }
}

function ModelCard({ model }: { model: PublicModel }) {
  const { raw, refreshAccount } = useSession()
  const [prompt, setPrompt] = useState('')
  const [width, setWidth] = useState(512)
  const [height, setHeight] = useState(512)
  const [job, setJob] = useState<JobView>()
  const run = useAction(async () => {
    setJob(undefined)
    const input = model.kind === 'image' ? { prompt, width, height } : { prompt }
    setJob(await jobApi.runsync(raw, model.id, { input }))
    void refreshAccount()
  })
  const output = (job?.output ?? {}) as { image_url?: string; text?: string; cost?: number }
  const submit = (event: FormEvent) => {
    event.preventDefault()
    void run.run()
  }
  return (
    <Section title={model.name}>
      <p>
        <span className="mono">{model.id}</span> · {model.kind} · {usd(model.price.usd)} per{' '}
        {model.price.unit}
        {model.reference ? ' · reference model (not AI)' : ''}
      </p>
      <p className="muted">{model.description}</p>
      <form className="form" onSubmit={submit} aria-label={`Try ${model.name}`}>
        <Field label={`Prompt for ${model.id}`}>
          {(props) => (
            <textarea
              {...props}
              rows={2}
              required
              value={prompt}
              onChange={(e) => setPrompt(e.target.value)}
            />
          )}
        </Field>
        {model.kind === 'image' ? (
          <div className="row">
            <Field label="Width">
              {(props) => (
                <input
                  {...props}
                  type="number"
                  min={64}
                  max={2048}
                  step={8}
                  value={width}
                  onChange={(e) => setWidth(Number(e.target.value))}
                />
              )}
            </Field>
            <Field label="Height">
              {(props) => (
                <input
                  {...props}
                  type="number"
                  min={64}
                  max={2048}
                  step={8}
                  value={height}
                  onChange={(e) => setHeight(Number(e.target.value))}
                />
              )}
            </Field>
          </div>
        ) : null}
        <ErrorMessage error={run.error} />
        <button type="submit" className="button primary" disabled={run.busy}>
          {run.busy ? 'Running…' : `Run ${model.id}`}
        </button>
      </form>
      <div aria-live="polite">
        {job ? (
          <div className="model-result">
            <p>
              {job.status}
              {output.cost !== undefined ? ` · cost ${usd(output.cost)}` : ''}
            </p>
            {job.error ? <pre className="output">{job.error}</pre> : null}
            {output.image_url ? (
              <img
                src={sameOrigin(output.image_url)}
                alt={`Generated for: ${prompt}`}
                className="result-image"
              />
            ) : null}
            {output.text ? <p className="answer">{output.text}</p> : null}
          </div>
        ) : null}
      </div>
    </Section>
  )
}
