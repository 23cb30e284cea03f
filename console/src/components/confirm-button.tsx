import { useState } from 'react'

/**
 * A destructive action in two presses: the first asks, the second does it. No modal dialog,
 * so the keyboard focus never leaves the row.
 */
export function ConfirmButton({
  label,
  confirmLabel,
  onConfirm,
  busy,
}: {
  label: string
  confirmLabel?: string
  onConfirm: () => void
  busy?: boolean
}) {
  const [asking, setAsking] = useState(false)
  if (!asking) {
    return (
      <button
        type="button"
        className="button danger"
        disabled={busy}
        onClick={() => setAsking(true)}
      >
        {label}
      </button>
    )
  }
  return (
    <span className="confirm">
      <button
        type="button"
        className="button danger"
        disabled={busy}
        autoFocus
        onClick={() => {
          setAsking(false)
          onConfirm()
        }}
      >
        {confirmLabel ?? `Yes, ${label.toLowerCase()}`}
      </button>
      <button type="button" className="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  )
}
