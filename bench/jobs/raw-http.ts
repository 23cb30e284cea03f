/**
 * A minimal HTTP/1.1 keep-alive client over one TCP socket, for the bench's `/run` submitters
 * (bench/README.md): like wrk or autocannon it writes prepared request bytes and reads
 * `Content-Length` framed responses, at a fraction of node:http's CPU per request, so that the
 * load generator takes less of the two cores the server shares with it. One request at a time
 * per connection (no pipelining). Not for anything but the bench: no chunked bodies, no redirects.
 */
import net from 'node:net'

export interface RawResponse {
  status: number
  body: string
}

export class RawHttpConnection {
  private readonly socket: net.Socket
  private readonly ready: Promise<void>
  private buffer: Buffer = Buffer.alloc(0)
  private pending: { resolve(r: RawResponse): void; reject(e: Error): void } | undefined

  constructor(private readonly url: URL) {
    this.socket = net.connect(Number(url.port || 80), url.hostname)
    this.socket.setNoDelay(true)
    this.ready = new Promise((resolve, reject) => {
      this.socket.once('connect', () => resolve())
      this.socket.once('error', reject)
    })
    this.socket.on('data', (data: Buffer) => {
      this.buffer = this.buffer.length === 0 ? data : Buffer.concat([this.buffer, data])
      this.parse()
    })
    this.socket.on('error', (error) => this.fail(error))
    this.socket.on('close', () => this.fail(new Error('the connection closed')))
  }

  /** Sends `method path` with a JSON body and the given headers; resolves with the response. */
  async request(
    method: string,
    path: string,
    body: string,
    headers: Record<string, string>,
  ): Promise<RawResponse> {
    await this.ready
    if (this.pending) throw new Error('one request at a time per connection')
    const lines = [
      `${method} ${path} HTTP/1.1`,
      `host: ${this.url.host}`,
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
      `content-length: ${Buffer.byteLength(body)}`,
      '',
      body,
    ]
    return new Promise<RawResponse>((resolve, reject) => {
      this.pending = { resolve, reject }
      this.socket.write(lines.join('\r\n'))
    })
  }

  close(): void {
    this.socket.destroy()
  }

  private parse(): void {
    const end = this.buffer.indexOf('\r\n\r\n')
    if (end < 0 || this.pending === undefined) return
    const head = this.buffer.subarray(0, end).toString('latin1')
    const status = Number(head.slice(9, 12))
    // 204 and 304 have no body, and need not say so.
    const length =
      status === 204 || status === 304 ? [head, '0'] : /\r\ncontent-length:\s*(\d+)/i.exec(head)
    if (!length) {
      this.fail(new Error(`a response without content-length: ${head.slice(0, 200)}`))
      return
    }
    const total = end + 4 + Number(length[1])
    if (this.buffer.length < total) return
    const body = this.buffer.subarray(end + 4, total).toString('utf8')
    this.buffer = this.buffer.subarray(total)
    const pending = this.pending
    this.pending = undefined
    pending.resolve({ status, body })
  }

  private fail(error: Error): void {
    const pending = this.pending
    this.pending = undefined
    pending?.reject(error)
  }
}
