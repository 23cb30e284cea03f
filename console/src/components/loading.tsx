/** A polite "loading" line that screen readers announce. */
export function Loading({ what }: { what: string }) {
  return (
    <p role="status" className="loading">
      Loading {what}…
    </p>
  )
}
