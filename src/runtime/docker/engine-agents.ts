import { Agent as HttpAgent, type ClientRequestArgs } from 'node:http'
import type { Duplex } from 'node:stream'
import { Client, type ConnectConfig } from 'ssh2'

/**
 * The HTTP agent of a remote engine over SSH: each request runs `docker system dial-stdio` on
 * an SSH connection of its own (as docker-modem does: sshd allows only a few sessions per
 * connection), but the connections are the agent's, so that destroy() ends every one still
 * open: a host let go leaves no SSH connection behind.
 */
export class SshEngineAgent extends HttpAgent {
  private readonly clients = new Set<Client>()

  constructor(readonly ssh: ConnectConfig) {
    super({ keepAlive: false })
  }

  /** SSH connections open now (connecting, or carrying a request). */
  get openConnections(): number {
    return this.clients.size
  }

  override createConnection(
    _options: ClientRequestArgs,
    callback?: (error: Error | null, stream: Duplex) => void,
  ): undefined {
    const client = new Client()
    this.clients.add(client)
    let answered = false
    const answer = (error: Error | null, stream?: Duplex) => {
      if (answered) return
      answered = true
      callback?.(error, stream as Duplex)
    }
    client.on('error', (error: Error) => {
      client.end()
      answer(error)
    })
    client.once('close', () => {
      this.clients.delete(client)
      answer(new Error('the SSH connection closed before the engine answered'))
    })
    client.once('ready', () => {
      client.exec('docker system dial-stdio', (error, stream) => {
        if (error) {
          client.end()
          return answer(error)
        }
        stream.once('close', () => client.end())
        answer(null, stream)
      })
    })
    client.connect(this.ssh)
    return undefined
  }

  override destroy(): void {
    super.destroy()
    for (const client of this.clients) client.destroy()
    this.clients.clear()
  }
}
