import { useState } from 'react'

/**
 * A destructive action in two presses: the first asks, the second does it. No modal dialog,
 * so the keyboard focus never leaves the row. `subject` names what it acts on for screen
 * readers only, where a table row already shows it ("Delete", heard as "Delete my-volume").
 */
export function ConfirmButton({
  label,
  subject,
  confirmLabel,
  onConfirm,
  busy,
}: {
  label: string
  subject?: string
  confirmLabel?: string
  onConfirm: () => void
  busy?: boolean
}) {
  const [asking, setAsking] = useState(false)
  const named = subject ? <span className="offscreen"> {subject}</span> : null
  if (!asking) {
    return (
      <button
        type="button"
        className="button danger"
        disabled={busy}
        onClick={() => setAsking(true)}
      >
        {label}
        {named}
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
        {named}
      </button>
      <button type="button" className="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  )
}
