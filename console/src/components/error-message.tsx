import type { ApiError } from '../api/problem'

/** A failed call as the API explained it: its detail, and each failing field on its own line. */
export function ErrorMessage({
  error,
  className,
}: {
  error: ApiError | undefined
  className?: string
}) {
  if (!error) return null
  const problems = error.errors.filter((line) => !error.message.endsWith(line))
  return (
    <div role="alert" className={`error ${className ?? ''}`}>
      <p>
        {error.status > 0 ? <strong>{error.title || `Error ${error.status}`}: </strong> : null}
        {error.message}
      </p>
      {problems.length > 1 || (problems.length === 1 && !error.message.includes(problems[0]!)) ? (
        <ul>
          {problems.map((line) => (
            <li key={line}>{line}</li>
          ))}
        </ul>
      ) : null}
    </div>
  )
}
