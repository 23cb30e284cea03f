import { CopyButton } from './copy-button'

/** A secret the API shows only once (a new API key): a card to copy it from, then dismiss. */
export function ShownOnce({
  id,
  title,
  note,
  label,
  secret,
  doneLabel,
  onDone,
}: {
  /** The id of the card's heading, which names the region. */
  id: string
  title: string
  note: string
  /** The accessible name of the field that holds the secret. */
  label: string
  secret: string
  doneLabel: string
  onDone: () => void
}) {
  return (
    <div className="card new-key" role="region" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      <p>{note}</p>
      <p>
        <input
          className="mono wide"
          readOnly
          aria-label={label}
          value={secret}
          onFocus={(e) => e.target.select()}
        />{' '}
        <CopyButton text={secret} label="Copy key" />
      </p>
      <button type="button" className="button" onClick={onDone}>
        {doneLabel}
      </button>
    </div>
  )
}
