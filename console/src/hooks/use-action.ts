import { useCallback, useState } from 'react'
import { asApiError, type ApiError } from '../api/problem'

export interface Action<A extends unknown[]> {
  run(...args: A): Promise<boolean>
  busy: boolean
  error: ApiError | undefined
  clearError(): void
}

/** A button's call to the API: busy while it runs, its problem+json kept to show. */
export function useAction<A extends unknown[]>(
  perform: (...args: A) => Promise<unknown>,
): Action<A> {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<ApiError | undefined>()
  const run = useCallback(
    async (...args: A) => {
      setBusy(true)
      setError(undefined)
      try {
        await perform(...args)
        return true
      } catch (caught) {
        setError(asApiError(caught))
        return false
      } finally {
        setBusy(false)
      }
    },
    [perform],
  )
  return { run, busy, error, clearError: () => setError(undefined) }
}
