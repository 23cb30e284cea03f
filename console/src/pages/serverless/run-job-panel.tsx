import { useEffect, useId, useRef, useState } from 'react'
import {
  FINISHED,
  jobApi,
  type EndpointHealth,
  type JobSubmission,
  type JobView,
} from '../../api/job-api'
import { ApiError, asApiError } from '../../api/problem'
import { ErrorMessage } from '../../components/error-message'
import { Section } from '../../components/page'
import { StatusBadge } from '../../components/status-badge'
import { useSession } from '../../session/session'

const EXAMPLE = JSON.stringify({ input: { prompt: 'hello from the console' } }, null, 2)
/** How often a job that waits for a worker asks `/health` why none takes it. */
const FAILURE_POLL_MS = 3000

type StartBackoff = NonNullable<EndpointHealth['startBackoff']>

/** Why the endpoint's workers do not start: the last failure's reason and last lines. */
function WorkersFailing({ backoff }: { backoff: StartBackoff }) {
  const lines = backoff.lastFailure?.lastLines ?? []
  return (
    <div className="notice" role="status">
      <p>
        No worker takes the job yet: workers keep failing ({backoff.failures} in a row
        {backoff.lastFailure ? `; the last ${backoff.lastFailure.reason}` : ''}).
      </p>
      {lines.length > 0 ? (
        <pre className="output" aria-label="Last lines of the failed worker" tabIndex={0}>
          {lines.join('\n')}
        </pre>
      ) : null}
    </div>
  )
}

function parseSubmission(text: string): JobSubmission {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch (error) {
    throw new ApiError(0, 'Not JSON', `the request is not JSON: ${(error as Error).message}`)
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ApiError(
      0,
      'Not a request',
      'the request must be a JSON object like {"input": {...}}',
    )
  }
  if (
    typeof (body as { input?: unknown }).input !== 'object' ||
    (body as { input?: unknown }).input === null
  ) {
    throw new ApiError(0, 'No input', 'the request needs "input", a JSON object: {"input": {...}}')
  }
  return body as JobSubmission
}

/**
 * Sends a job from the browser (`/run` or `/runsync`), follows it live through `/stream`
 * (which also carries its status) until it ends, and can cancel it.
 */
export function RunJobPanel({ endpointId }: { endpointId: string }) {
  const { raw } = useSession()
  const [text, setText] = useState(EXAMPLE)
  const [job, setJob] = useState<JobView>()
  const [chunks, setChunks] = useState<unknown[]>([])
  const [error, setError] = useState<ApiError>()
  const [running, setRunning] = useState(false)
  const [failing, setFailing] = useState<StartBackoff>()
  const following = useRef<AbortController>(undefined)
  /** The job is sent or queued: no worker has it yet. */
  const waiting = useRef(false)
  const inputId = useId()

  useEffect(() => () => following.current?.abort(), [])

  /** While the job waits for a worker (the /runsync wait included), shows why none starts. */
  const watchFailures = async (signal: AbortSignal) => {
    while (waiting.current && !signal.aborted) {
      try {
        const health = await jobApi.health(raw, endpointId)
        if (!signal.aborted) setFailing(waiting.current ? health.startBackoff : undefined)
      } catch {
        // Only a hint: the job's own answer says what went wrong.
      }
      await new Promise((resolve) => setTimeout(resolve, FAILURE_POLL_MS))
    }
  }

  const follow = async (start: JobView, signal: AbortSignal) => {
    let current = start
    waiting.current = current.status === 'IN_QUEUE'
    if (!waiting.current) setFailing(undefined)
    while (!FINISHED.has(current.status) && !signal.aborted) {
      const stream = await jobApi.stream(raw, endpointId, current.id, signal)
      if (stream.stream.length > 0)
        setChunks((list) => [...list, ...stream.stream.map((c) => c.output)])
      if (stream.status !== current.status) {
        current = { ...current, status: stream.status }
        setJob(current)
        waiting.current = current.status === 'IN_QUEUE'
        if (!waiting.current) setFailing(undefined)
      }
      if (FINISHED.has(stream.status)) break
      if (stream.stream.length === 0) await new Promise((resolve) => setTimeout(resolve, 500))
    }
    if (!signal.aborted) setJob(await jobApi.status(raw, endpointId, current.id))
  }

  const submit = async (mode: 'run' | 'runsync') => {
    following.current?.abort()
    const controller = new AbortController()
    following.current = controller
    setError(undefined)
    setChunks([])
    setJob(undefined)
    setFailing(undefined)
    setRunning(true)
    waiting.current = true
    void watchFailures(controller.signal)
    try {
      const body = parseSubmission(text)
      const started =
        mode === 'run'
          ? await jobApi.run(raw, endpointId, body)
          : await jobApi.runsync(raw, endpointId, body, controller.signal)
      setJob(started)
      await follow(started, controller.signal)
    } catch (caught) {
      if (!controller.signal.aborted) setError(asApiError(caught))
    } finally {
      if (following.current === controller) {
        waiting.current = false
        setFailing(undefined)
        setRunning(false)
      }
    }
  }

  const cancel = async () => {
    if (!job) return
    try {
      setJob(await jobApi.cancel(raw, endpointId, job.id))
    } catch (caught) {
      setError(asApiError(caught))
    }
  }

  return (
    <Section title="Run a job">
      <div className="field">
        <label htmlFor={inputId}>Request (JSON)</label>
        <textarea
          id={inputId}
          className="mono"
          rows={6}
          spellCheck={false}
          value={text}
          onChange={(event) => setText(event.target.value)}
          aria-describedby={`${inputId}-hint`}
        />
        <p className="hint" id={`${inputId}-hint`}>
          The body of /run: <code>input</code>, and optionally <code>webhook</code> and{' '}
          <code>policy</code>.
        </p>
      </div>
      <div className="actions">
        <button
          type="button"
          className="button primary"
          disabled={running}
          onClick={() => void submit('run')}
        >
          Run
        </button>
        <button
          type="button"
          className="button"
          disabled={running}
          onClick={() => void submit('runsync')}
        >
          Run sync
        </button>
        <button
          type="button"
          className="button"
          disabled={!job || FINISHED.has(job.status)}
          onClick={() => void cancel()}
        >
          Cancel job
        </button>
      </div>
      <ErrorMessage error={error} />
      <div aria-live="polite" className="job-result">
        {job ? (
          <p>
            Job <span className="mono">{job.id}</span> <StatusBadge status={job.status} />
            {job.delayTime !== undefined ? (
              <span className="muted"> waited {job.delayTime} ms</span>
            ) : null}
            {job.executionTime ? <span className="muted">, ran {job.executionTime} ms</span> : null}
          </p>
        ) : running ? (
          <p>Sending…</p>
        ) : null}
        {failing && running ? <WorkersFailing backoff={failing} /> : null}
      </div>
      {chunks.length > 0 ? (
        <>
          <h3>Stream</h3>
          <pre className="output" aria-label="Stream output" tabIndex={0}>
            {chunks.map((chunk) => JSON.stringify(chunk)).join('\n')}
          </pre>
        </>
      ) : null}
      {job && (job.output !== undefined || job.error !== undefined) ? (
        <>
          <h3>{job.error !== undefined ? 'Error' : 'Output'}</h3>
          <pre className="output" aria-label="Job output" tabIndex={0}>
            {job.error !== undefined ? job.error : JSON.stringify(job.output, null, 2)}
          </pre>
        </>
      ) : null}
    </Section>
  )
}
