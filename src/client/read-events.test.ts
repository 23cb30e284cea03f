import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ApiClient, readEvents, type ServerSentEvent } from './api-client.js'

/** A response whose body arrives in exactly these chunks (to split frames at awkward places). */
function streamOf(chunks: string[]): Response {
  const encoder = new TextEncoder()
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk))
      controller.close()
    },
  })
  return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
}

async function eventsOf(chunks: string[]): Promise<ServerSentEvent[]> {
  const events: ServerSentEvent[] = []
  for await (const event of readEvents(streamOf(chunks))) events.push(event)
  return events
}

describe('readEvents (text/event-stream as the HTML standard frames it)', () => {
  it('reads LF-framed events with ids', async () => {
    expect(await eventsOf(['id: 1\ndata: {"a":1}\n\nid: 2\ndata: {"a":2}\n\n'])).toEqual([
      { id: '1', data: '{"a":1}' },
      { id: '2', data: '{"a":2}' },
    ])
  })

  it('reads CRLF-framed events, a CR and its LF split across chunks', async () => {
    expect(
      await eventsOf(['id: 7\r\ndata: one\r', '\n\r', '\nid: 8\r\ndata: two\r\n\r\n']),
    ).toEqual([
      { id: '7', data: 'one' },
      { id: '8', data: 'two' },
    ])
  })

  it('reads CR-only line ends', async () => {
    // A CR that is the stream's very last byte may yet be followed by an LF: the parser waits
    // for the next byte, so the stream here goes on (a comment) after the second event.
    expect(await eventsOf(['data: cr\r\rdata: again\r\r', ': bye\r'])).toEqual([
      { id: undefined, data: 'cr' },
      { id: undefined, data: 'again' },
    ])
  })

  it('reads `data:` without a space, and keeps a second space as data', async () => {
    expect(await eventsOf(['id:3\ndata:{"x":1}\n\ndata:  two spaces\n\n'])).toEqual([
      { id: '3', data: '{"x":1}' },
      { id: undefined, data: ' two spaces' },
    ])
  })

  it('joins multi-line data with LF, skips comments and reads the event type', async () => {
    expect(
      await eventsOf([': keep-alive\n\nevent: end\ndata: a\r\ndata:b\n', ':c\ndata: c\n\n']),
    ).toEqual([{ id: undefined, event: 'end', data: 'a\nb\nc' }])
  })

  it('reads a frame split in the middle of a field name and of a UTF-8 character', async () => {
    const bytes = new TextEncoder().encode('da' + 'ta: héllo 名前\n\n')
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        // Split inside 'é' (two bytes) and inside '名' (three bytes).
        for (const [from, to] of [
          [0, 2],
          [2, 9],
          [9, 16],
          [16, bytes.length],
        ] as const) {
          controller.enqueue(bytes.slice(from, to))
        }
        controller.close()
      },
    })
    const events: ServerSentEvent[] = []
    for await (const event of readEvents(new Response(body))) events.push(event)
    expect(events).toEqual([{ id: undefined, data: 'héllo 名前' }])
  })

  it('drops an event the stream ends before its blank line', async () => {
    expect(await eventsOf(['data: whole\n\ndata: cut off\n'])).toEqual([
      { id: undefined, data: 'whole' },
    ])
  })
})

describe('readEvents over HTTP from a server that frames with CRLF', () => {
  let server: Server
  let url: string
  beforeAll(async () => {
    server = createServer((request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' })
      // Written in pieces, as a proxy that rewrites line ends might forward them.
      response.write('id:1\r\ndata:{"line":"first"}\r\n')
      setTimeout(() => {
        response.write('\r\n: comment\r\n\r\nid: 2\r\ndata: {"line":"second"}\r\n\r\n')
        response.end()
      }, 20)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  it('yields every event through the CLI client', async () => {
    const response = await new ApiClient(url, undefined).open('/logs')
    const lines: Array<[string | undefined, string]> = []
    for await (const event of readEvents(response)) {
      lines.push([event.id, (JSON.parse(event.data) as { line: string }).line])
    }
    expect(lines).toEqual([
      ['1', 'first'],
      ['2', 'second'],
    ])
  })
})
