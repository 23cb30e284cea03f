import { useLocation } from 'wouter'
import { ok } from '../../api/client'
import type { Pod } from '../../api/types'
import { ConfirmButton } from '../../components/confirm-button'
import { ErrorMessage } from '../../components/error-message'
import { useAction } from '../../hooks/use-action'
import { useSession } from '../../session/session'

type Action = 'start' | 'stop' | 'restart' | 'reset' | 'terminate'

const labels: Record<Action, string> = {
  start: 'Start',
  stop: 'Stop',
  restart: 'Restart',
  reset: 'Reset',
  terminate: 'Terminate',
}

/**
 * The actions the pod offers now (its `actions`), `reset` wherever restart or start is, and the
 * lock, which refuses stop and reset while it is on (docs/pods.md, "Lifecycle").
 */
export function PodActions({ pod, onChange }: { pod: Pod; onChange: () => void }) {
  const { api } = useSession()
  const [, navigate] = useLocation()
  const act = useAction(async (action: Action) => {
    await ok(
      api.POST('/v2/pods/{id}/action', { params: { path: { id: pod.id } }, body: { action } }),
    )
    if (action === 'terminate') navigate('/pods')
    else onChange()
  })
  const lock = useAction(async (locked: boolean) => {
    await ok(api.PATCH('/v2/pods/{id}', { params: { path: { id: pod.id } }, body: { locked } }))
    onChange()
  })
  const offered: Action[] = [
    ...pod.actions.filter((a) => a !== 'terminate'),
    ...(pod.actions.includes('restart') || pod.actions.includes('start')
      ? (['reset'] as const)
      : []),
  ]
  return (
    <div className="actions" role="group" aria-label="Pod actions">
      {offered.map((action) => (
        <button
          key={action}
          type="button"
          className="button"
          disabled={act.busy || (pod.locked && (action === 'stop' || action === 'reset'))}
          onClick={() => void act.run(action)}
        >
          {labels[action]}
        </button>
      ))}
      <button
        type="button"
        className="button"
        aria-pressed={pod.locked}
        disabled={lock.busy}
        onClick={() => void lock.run(!pod.locked)}
      >
        {pod.locked ? 'Unlock' : 'Lock'}
      </button>
      {pod.actions.includes('terminate') ? (
        <ConfirmButton
          label="Terminate"
          confirmLabel="Yes, terminate this pod"
          busy={act.busy}
          onConfirm={() => void act.run('terminate')}
        />
      ) : null}
      <ErrorMessage error={act.error ?? lock.error} />
    </div>
  )
}
