import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestPlatform, type TestPlatform } from '../support/platform.js'

/**
 * What the router and Node's HTTP parser refuse before any route runs is answered as
 * problem+json like every other error (docs/api.md, "Errors before routing"), and a connection
 * that cannot go on says `Connection: close` before it ends.
 */

interface RawAnswer {
  head: string
  status: number
  headers: Record<string, string>
  body: string
  /** The server ended the connection after its answer. */
  closed: boolean
}

/** Sends `request` as raw bytes and reads until the server closes (or 5 s pass). */
function rawRequest(url: string, request: string): Promise<RawAnswer> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname)
    let data = ''
    let closed = false
    const timer = setTimeout(() => socket.destroy(), 5_000)
    socket.on('error', (error: NodeJS.ErrnoException) => {
      // The server may reset once it answered; what it sent before is what counts.
      if (error.code !== 'ECONNRESET' && error.code !== 'EPIPE') reject(error)
    })
    socket.on('data', (chunk: Buffer) => (data += chunk.toString('latin1')))
    socket.on('end', () => (closed = true))
    socket.on('close', () => {
      clearTimeout(timer)
      const [head = '', body = ''] = data.split('\r\n\r\n')
      const [statusLine = '', ...lines] = head.split('\r\n')
      const headers: Record<string, string> = {}
      for (const line of lines) {
        const at = line.indexOf(':')
        headers[line.slice(0, at).toLowerCase()] = line.slice(at + 1).trim()
      }
      resolve({ head, status: Number(statusLine.split(' ')[1]), headers, body, closed })
    })
    socket.write(request)
  })
}

describe('errors before routing', () => {
  let platform: TestPlatform

  beforeAll(async () => {
    platform = await startTestPlatform()
  })
  afterAll(() => platform?.close())

  const problemOf = async (response: Response, status: number) => {
    expect(response.status).toBe(status)
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    return (await response.json()) as { title: string; status: number; detail: string }
  }

  it('414 problem+json for a path parameter longer than an id can be', async () => {
    const body = await problemOf(await platform.call(`/v2/pods/${'a'.repeat(101)}`), 414)
    expect(body).toMatchObject({ title: 'URI Too Long', status: 414 })
    expect(body.detail).toContain('longer than 100 characters')
    // 100 is still an id the router passes on (an unknown one here).
    expect((await platform.call(`/v2/pods/${'a'.repeat(100)}`)).status).toBe(404)
  })

  it('400 problem+json for a path that is not valid percent-encoding', async () => {
    const body = await problemOf(await platform.call('/v2/pods/%E0%A4%A'), 400)
    expect(body).toMatchObject({ title: 'Bad Request', status: 400 })
    expect(body.detail).toContain('not valid percent-encoding')
  })

  it('431 problem+json with Connection: close for a URL over the header limit', async () => {
    const answer = await rawRequest(
      platform.url,
      `GET /v2/pods?x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: localhost\r\n\r\n`,
    )
    expect(answer.status).toBe(431)
    expect(answer.headers['content-type']).toBe('application/problem+json')
    expect(answer.headers.connection).toBe('close')
    const body = JSON.parse(answer.body) as { status: number; detail: string }
    expect(body).toMatchObject({ status: 431, title: 'Request Header Fields Too Large' })
    expect(Number(answer.headers['content-length'])).toBe(Buffer.byteLength(answer.body))
    expect(answer.closed).toBe(true)
  })

  it('400 problem+json with Connection: close for a request HTTP cannot parse', async () => {
    const answer = await rawRequest(platform.url, 'GET /v2/pods HTTP/1.1\r\nBad Header\r\n\r\n')
    expect(answer.status).toBe(400)
    expect(answer.headers['content-type']).toBe('application/problem+json')
    expect(answer.headers.connection).toBe('close')
    expect(JSON.parse(answer.body)).toMatchObject({ status: 400, title: 'Bad Request' })
  })

  it('the server keeps answering after each of them', async () => {
    const healthz = await fetch(`${platform.url}/healthz`)
    expect(healthz.status).toBe(200)
  })
})
