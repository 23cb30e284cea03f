import { useState } from 'react'
import { ok } from '../../api/client'
import { ConfirmButton } from '../../components/confirm-button'
import { CopyButton } from '../../components/copy-button'
import { ErrorMessage } from '../../components/error-message'
import { Section } from '../../components/page'
import { useAction } from '../../hooks/use-action'
import { useSession } from '../../session/session'

/**
 * The endpoint's worker key (RUNPOD_AI_API_KEY of workers you run yourself): hidden until
 * asked for, and rotated on request, which cuts off every worker that holds the old one.
 */
export function WorkerKeyPanel({ endpointId }: { endpointId: string }) {
  const { api } = useSession()
  const [key, setKey] = useState<{ workerKey: string; generation: number }>()
  const reveal = useAction(async () => {
    setKey(
      await ok(api.GET('/v2/serverless/{id}/worker-key', { params: { path: { id: endpointId } } })),
    )
  })
  const rotate = useAction(async () => {
    setKey(
      await ok(
        api.POST('/v2/serverless/{id}/worker-key/rotate', { params: { path: { id: endpointId } } }),
      ),
    )
  })
  return (
    <Section title="Worker key">
      <p className="hint">
        Workers that you start yourself authenticate with this key (as{' '}
        <code>RUNPOD_AI_API_KEY</code>); the platform gives it to the workers it starts.
      </p>
      {key ? (
        <p>
          <input className="mono wide" readOnly aria-label="Worker key" value={key.workerKey} />{' '}
          <CopyButton text={key.workerKey} label="Copy worker key" />{' '}
          <span className="muted">generation {key.generation}</span>
        </p>
      ) : null}
      <div className="actions">
        {key ? (
          <button type="button" className="button" onClick={() => setKey(undefined)}>
            Hide
          </button>
        ) : (
          <button
            type="button"
            className="button"
            disabled={reveal.busy}
            onClick={() => void reveal.run()}
          >
            Reveal worker key
          </button>
        )}
        <ConfirmButton
          label="Rotate"
          confirmLabel="Yes, rotate the worker key"
          busy={rotate.busy}
          onConfirm={() => void rotate.run()}
        />
      </div>
      <ErrorMessage error={reveal.error ?? rotate.error} />
    </Section>
  )
}
