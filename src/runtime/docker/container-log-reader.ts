import type Docker from 'dockerode'
import type { LogLine, LogQuery } from '../driver.js'
import type { LogTime } from './follow-stall.js'
import { LogFrameDecoder } from './log-frames.js'
import { LogNumbering, lostLinesNote, type ContainerLogNumbers } from './log-numbering.js'

/**
 * Reading a container's retained log without holding it: dockerode answers a log request that
 * does not follow with the whole body in one Buffer (up to the log's cap, 50 MB by default,
 * then decoded into as many line objects). Here the body is a stream, decoded a chunk at a
 * time, and a read keeps only the lines it returns.
 *
 * The lines are numbered from the start of the retained log (LogFrameDecoder, then
 * LogNumbering), so a read still goes through the whole retained log; what it costs in memory
 * is one chunk, the lines asked for and the few held back to find their numbers, whatever the
 * log's size.
 */

interface LogStream extends AsyncIterable<Buffer> {
  destroy(): void
}

/**
 * The container's log as a stream (not followed; its last `tail` lines when given), or
 * undefined when the container is gone.
 */
function openLogStream(container: Docker.Container, tail?: number): Promise<LogStream | undefined> {
  return new Promise((resolve, reject) => {
    ;(
      container.modem as { dial: (options: object, done: (e: unknown, s: unknown) => void) => void }
    ).dial(
      {
        path: `/containers/${container.id}/logs?`,
        method: 'GET',
        // What dockerode's own logs() leaves out when it does not follow.
        isStream: true,
        statusCodes: { 200: true, 404: 'no such container', 500: 'server error' },
        options: {
          stdout: true,
          stderr: true,
          timestamps: true,
          follow: false,
          ...(tail === undefined ? {} : { tail }),
        },
      },
      (error, stream) => {
        if (!error) resolve(stream as LogStream)
        else if ((error as { statusCode?: number }).statusCode === 404) resolve(undefined)
        else reject(error as Error)
      },
    )
  })
}

/**
 * The container's own lines, numbered after `base` where `numbers` says they fall
 * (log-numbering.ts), decoded as they arrive; where lines after `afterSeq` were deleted before
 * the oldest one kept, a note says so in their place.
 */
export async function* containerLogLines(
  container: Docker.Container,
  base: number,
  numbers: ContainerLogNumbers,
  afterSeq = base,
): AsyncGenerator<LogLine> {
  const stream = await openLogStream(container)
  if (!stream) return
  const decoder = new LogFrameDecoder()
  const numbering = new LogNumbering(numbers, base)
  let noted = false
  function* withNote(lines: LogLine[]): Generator<LogLine> {
    if (!noted && numbering.start) {
      noted = true
      const note = lostLinesNote(numbering.start, base, afterSeq)
      if (note) yield note
    }
    yield* lines
  }
  try {
    for await (const chunk of stream) yield* withNote(numbering.push(decoder.push(chunk)))
    yield* withNote([...numbering.push(decoder.end()), ...numbering.end()])
  } finally {
    stream.destroy()
  }
}

/** Docker's time of the container's newest line, undefined when it has none (or is gone). */
export async function newestLogTime(container: Docker.Container): Promise<LogTime | undefined> {
  const stream = await openLogStream(container, 1)
  if (!stream) return undefined
  const decoder = new LogFrameDecoder()
  let newest: LogTime | undefined
  try {
    for await (const chunk of stream) {
      for (const line of decoder.push(chunk)) newest = line.time ?? newest
    }
    for (const line of decoder.end()) newest = line.time ?? newest
  } finally {
    stream.destroy()
  }
  return newest
}

/**
 * What `query` asks of `lines` (afterSeq and since filter, then the last `tail`), keeping at
 * most twice `tail` lines at any time.
 */
export async function selectStreamedLines(
  lines: AsyncIterable<LogLine>,
  query: LogQuery = {},
): Promise<LogLine[]> {
  const since = query.since === undefined ? undefined : Date.parse(query.since)
  const tail = query.tail ?? Infinity
  if (tail <= 0) return []
  let kept: LogLine[] = []
  for await (const line of lines) {
    if (query.afterSeq !== undefined && line.seq <= query.afterSeq) continue
    if (since !== undefined && Date.parse(line.ts) < since) continue
    kept.push(line)
    if (kept.length >= 2 * tail) kept = kept.slice(kept.length - tail)
  }
  return kept.length > tail ? kept.slice(kept.length - tail) : kept
}
