import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Command } from 'commander'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { addVolumesCommands, formatBytes } from './volumes-commands.js'

interface Seen {
  method: string
  url: string
  authorization: string | undefined
  body: unknown
}

const volume = {
  id: 'abcde12345',
  name: 'data',
  size: 10,
  dataCenter: 'EU-RO-1',
  dataCenterId: 'EU-RO-1',
  type: 'STANDARD',
  usedBytes: 1024 ** 3,
  createdAt: '2026-01-01T00:00:00.000Z',
}

async function bodyOf(request: IncomingMessage): Promise<unknown> {
  let text = ''
  for await (const chunk of request) text += String(chunk)
  return text ? JSON.parse(text) : undefined
}

describe('podyard volumes', () => {
  let server: Server
  let url: string
  let seen: Seen[]
  let printed: string[]
  /** What the stub answers next: status and body. */
  let answer: { status: number; body?: unknown }

  beforeAll(async () => {
    server = createServer((request, response) => {
      void bodyOf(request).then((body) => {
        seen.push({
          method: request.method!,
          url: request.url!,
          authorization: request.headers.authorization,
          body,
        })
        response.writeHead(answer.status, { 'content-type': 'application/json' })
        response.end(answer.body === undefined ? '' : JSON.stringify(answer.body))
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  beforeEach(() => {
    seen = []
    printed = []
    answer = { status: 200, body: volume }
  })

  async function run(...args: string[]): Promise<void> {
    const program = new Command('podyard').exitOverride().configureOutput({ writeErr: () => {} })
    addVolumesCommands(program, { print: (text) => printed.push(text) })
    await program.parseAsync(['volumes', ...args, '--url', url, '--api-key', 'pyd_k'], {
      from: 'user',
    })
  }

  it('lists as a table with usage', async () => {
    answer = { status: 200, body: { networkVolumes: [volume] } }
    await run('list')
    expect(seen).toEqual([
      { method: 'GET', url: '/v2/network-volumes', authorization: 'Bearer pyd_k', body: undefined },
    ])
    expect(printed[0]).toMatch(/^ID\s+NAME\s+SIZE GB\s+USED\s+TYPE\s+DATA CENTER\s+CREATED\n/)
    expect(printed[0]).toMatch(/abcde12345\s+data\s+10\s+1\.0 GiB \(10%\)\s+STANDARD\s+EU-RO-1/)
  })

  it('creates with the v1 field name and STANDARD by default', async () => {
    answer = { status: 201, body: volume }
    await run('create', '--name', 'data', '--size', '10', '--data-center', 'EU-RO-1')
    expect(seen[0]).toMatchObject({
      method: 'POST',
      url: '/v2/network-volumes',
      body: { name: 'data', size: 10, dataCenterId: 'EU-RO-1', type: 'STANDARD' },
    })
    expect(printed[0]).toMatch(/^abcde12345 {2}data\n {2}size {8}10 GB/)
  })

  it('gets, resizes and renames by id, printing JSON when asked', async () => {
    await run('get', 'abcde12345', '--json')
    await run('resize', 'abcde12345', '--size', '20')
    await run('rename', 'abcde12345', 'new name')
    expect(seen.map((s) => [s.method, s.url, s.body])).toEqual([
      ['GET', '/v2/network-volumes/abcde12345', undefined],
      ['PATCH', '/v2/network-volumes/abcde12345', { size: 20 }],
      ['PATCH', '/v2/network-volumes/abcde12345', { name: 'new name' }],
    ])
    expect(JSON.parse(printed[0]!)).toEqual(volume)
  })

  it('deletes', async () => {
    answer = { status: 204 }
    await run('delete', 'abcde12345')
    expect(seen[0]).toMatchObject({ method: 'DELETE', url: '/v2/network-volumes/abcde12345' })
    expect(printed).toEqual(['Deleted abcde12345.'])
  })

  it('fails with the server’s detail', async () => {
    answer = {
      status: 400,
      body: { title: 'Bad Request', status: 400, detail: 'size cannot shrink from 20 to 10 GB' },
    }
    await expect(run('resize', 'abcde12345', '--size', '10')).rejects.toThrow(
      '400 Bad Request: size cannot shrink from 20 to 10 GB',
    )
  })

  it('refuses a size that is not a whole number before calling', async () => {
    await expect(run('resize', 'abcde12345', '--size', '1.5')).rejects.toThrow(
      /not a whole number of GB/,
    )
    expect(seen).toEqual([])
  })

  it('formats bytes', () => {
    expect(formatBytes(0)).toBe('0 B')
    expect(formatBytes(1023)).toBe('1023 B')
    expect(formatBytes(1536)).toBe('1.5 KiB')
    expect(formatBytes(5 * 1024 ** 4)).toBe('5.0 TiB')
  })
})
