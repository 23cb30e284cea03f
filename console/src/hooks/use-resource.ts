import { useCallback, useEffect, useRef, useState } from 'react'
import { asApiError, type ApiError } from '../api/problem'

export interface Resource<T> {
  data?: T
  error?: ApiError
  /** True until the first answer (later refreshes keep showing the last data). */
  loading: boolean
  reload(): void
}

/**
 * Data loaded from the API when a page shows, again when `deps` change or `reload()` is
 * called, and every `refreshMs` while the page stays open (live status). A refresh that fails
 * keeps the last data and shows the error beside it.
 */
export function useResource<T>(
  load: (signal: AbortSignal) => Promise<T>,
  deps: readonly unknown[],
  options: { refreshMs?: number } = {},
): Resource<T> {
  const [state, setState] = useState<{ data?: T; error?: ApiError; loading: boolean }>({
    loading: true,
  })
  const [generation, setGeneration] = useState(0)
  const loadRef = useRef(load)
  loadRef.current = load

  useEffect(() => {
    const controller = new AbortController()
    let timer: ReturnType<typeof setTimeout> | undefined
    const run = async () => {
      try {
        const data = await loadRef.current(controller.signal)
        if (!controller.signal.aborted) setState({ data, loading: false })
      } catch (error) {
        if (!controller.signal.aborted) {
          setState((current) => ({ ...current, error: asApiError(error), loading: false }))
        }
      }
      if (options.refreshMs && !controller.signal.aborted) {
        timer = setTimeout(run, options.refreshMs)
      }
    }
    setState((current) => ({ ...current, loading: current.data === undefined }))
    void run()
    return () => {
      controller.abort()
      if (timer) clearTimeout(timer)
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, generation, options.refreshMs])

  const reload = useCallback(() => setGeneration((n) => n + 1), [])
  return { ...state, reload }
}
