import { useEffect, useId, useRef, useState } from 'react'
import { asApiError, type ApiError } from '../api/problem'
import type { RawApi } from '../api/raw-api'
import { ErrorMessage } from './error-message'

const MAX_LINES = 2000
type Source = 'both' | 'container' | 'system'

interface LogLine {
  key: string
  ts: string
  source: string
  line: string
}

/**
 * Live logs of a pod or a worker: the server-sent events of its `/logs` route (docs/pods.md,
 * "Logs"), container output and podyard's system lines, newest at the bottom. The stream is
 * read with fetch (EventSource cannot send the Authorization header) and opened afresh when the
 * source changes. The server follows a container only while it runs, so a change of `run` (the
 * pod started again) reopens the stream where it was, with Last-Event-ID: nothing is lost and
 * nothing repeats.
 */
export function LogView({
  raw,
  path,
  title,
  run,
}: {
  raw: RawApi
  path: string
  title: string
  run?: string
}) {
  const [source, setSource] = useState<Source>('both')
  const [lines, setLines] = useState<LogLine[]>([])
  const [state, setState] = useState<'connecting' | 'live' | 'ended'>('connecting')
  const [error, setError] = useState<ApiError>()
  const box = useRef<HTMLPreElement>(null)
  const lastId = useRef<{ stream: string; id: string }>(undefined)
  const selectId = useId()

  useEffect(() => {
    const controller = new AbortController()
    const stream = `${path} ${source}`
    const resumeAfter = lastId.current?.stream === stream ? lastId.current.id : undefined
    if (resumeAfter === undefined) setLines([])
    setError(undefined)
    setState('connecting')
    const query = `?tail=200&follow=true${source === 'both' ? '' : `&source=${source}`}`
    ;(async () => {
      try {
        let count = 0
        setState('live')
        for await (const event of raw.events(`${path}${query}`, controller.signal, resumeAfter)) {
          const parsed = JSON.parse(event.data) as { ts: string; source: string; line: string }
          const entry = { key: event.id ?? `${stream} ${count++}`, ...parsed }
          if (event.id) lastId.current = { stream, id: event.id }
          setLines((current) => [...current.slice(-(MAX_LINES - 1)), entry])
        }
        setState('ended')
      } catch (caught) {
        if (controller.signal.aborted) return
        setError(asApiError(caught))
        setState('ended')
      }
    })()
    return () => controller.abort()
  }, [raw, path, source, run])

  useEffect(() => {
    const element = box.current
    if (element) element.scrollTop = element.scrollHeight
  }, [lines])

  return (
    <div className="logs">
      <div className="logs-toolbar">
        <label htmlFor={selectId}>Source</label>
        <select id={selectId} value={source} onChange={(e) => setSource(e.target.value as Source)}>
          <option value="both">container and system</option>
          <option value="container">container</option>
          <option value="system">system</option>
        </select>
        <span className="muted" role="status">
          {state === 'live' ? 'live' : state === 'connecting' ? 'connecting…' : 'stream ended'}
        </span>
      </div>
      <ErrorMessage error={error} />
      <pre ref={box} className="log-lines" role="log" aria-label={title} tabIndex={0}>
        {lines.length === 0 ? (
          <span className="muted">No log lines yet.</span>
        ) : (
          lines.map((entry) => (
            <span key={entry.key} className={`log-line log-${entry.source}`}>
              <span className="log-ts">{entry.ts.slice(11, 19)}</span>{' '}
              <span className="log-source">{entry.source === 'system' ? 'sys' : 'out'}</span>{' '}
              {entry.line}
              {'\n'}
            </span>
          ))
        )}
      </pre>
    </div>
  )
}
