import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../support/cli.js'
import { TEST_ADMIN_KEY, startTestPlatform, type TestPlatform } from '../support/platform.js'

type Json = Record<string, unknown>
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * A tiny worker over plain fetch (job-take, job-stream, job-done) with the endpoint's worker
 * key: `{"chunks": [...]}` streams each chunk, `{"fail": "msg"}` fails, anything else is echoed.
 */
function startWorker(baseUrl: string, endpointId: string, key: string) {
  const controller = new AbortController()
  const taken: Json[] = []
  const base = `${baseUrl}/v2/${endpointId}`
  const headers = { authorization: key, 'content-type': 'application/x-www-form-urlencoded' }
  const post = async (route: string, body: unknown) => {
    const response = await fetch(`${base}/${route}?gpu=any&isStream=false`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: controller.signal,
    })
    if (response.status !== 200) throw new Error(`${route}: ${response.status}`)
  }
  const loop = (async () => {
    while (!controller.signal.aborted) {
      const response = await fetch(
        `${base}/job-take/cli-worker?gpu=any&wait=2000&job_in_progress=0`,
        {
          headers,
          signal: controller.signal,
        },
      )
      if (response.status === 204) continue
      if (response.status !== 200) throw new Error(`job-take: ${response.status}`)
      const job = (await response.json()) as { id: string; input: Json }
      taken.push(job)
      const done = `job-done/cli-worker/${job.id}`
      if (Array.isArray(job.input.chunks)) {
        for (const chunk of job.input.chunks) {
          await post(`job-stream/cli-worker/${job.id}`, { output: chunk })
          await sleep(100)
        }
        await post(done, { output: { chunks: job.input.chunks.length } })
      } else if (typeof job.input.fail === 'string') {
        await post(done, { error: job.input.fail })
      } else {
        await post(done, { output: job.input })
      }
    }
  })().catch((error: unknown) => {
    if (!controller.signal.aborted) throw error
  })
  return {
    taken,
    stop: async () => {
      controller.abort()
      await loop
    },
  }
}

// Each step is a CLI process (about a second on a busy 2-core machine): generous timeouts.
describe('podyard jobs', { timeout: 90_000 }, () => {
  let platform: TestPlatform
  let worker: ReturnType<typeof startWorker>
  let served: string
  let idle: string
  let dir: string
  const flags = () => ['--url', platform.url, '--api-key', TEST_ADMIN_KEY]
  const jobs = (args: string[], stdin?: string) =>
    runCli(['jobs', ...args, ...flags()], {}, stdin === undefined ? {} : { stdin })

  const createEndpoint = async (name: string) => {
    const response = await platform.call('/v2/serverless', {
      method: 'POST',
      json: { name, image: 'worker:1', cpu: [{ id: 'cpu3c', vcpuCount: 2 }] },
    })
    expect(response.status).toBe(201)
    return ((await response.json()) as { id: string }).id
  }

  beforeAll(async () => {
    platform = await startTestPlatform()
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-jobs-cli-'))
    served = await createEndpoint('served')
    idle = await createEndpoint('idle')
    const key = await runCli(['endpoints', 'worker-key', served, ...flags()])
    expect(key.code, key.stderr).toBe(0)
    worker = startWorker(platform.url, served, key.stdout.trim())
  })
  afterAll(async () => {
    await worker?.stop()
    await platform?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('endpoints worker-key prints the bare key, --json the view, --rotate a new one', async () => {
    const key = await runCli(['endpoints', 'worker-key', idle, ...flags()])
    expect(key.code, key.stderr).toBe(0)
    expect(key.stdout).toMatch(new RegExp(`^pydw_${idle}_[A-Za-z0-9_-]{43}\\n$`))
    const view = await runCli(['endpoints', 'worker-key', idle, '--json', ...flags()])
    expect(JSON.parse(view.stdout)).toEqual({
      endpointId: idle,
      workerKey: key.stdout.trim(),
      generation: 1,
    })
    const rotated = await runCli([
      'endpoints',
      'worker-key',
      idle,
      '--rotate',
      '--json',
      ...flags(),
    ])
    expect(rotated.code, rotated.stderr).toBe(0)
    const after = JSON.parse(rotated.stdout) as { workerKey: string; generation: number }
    expect(after.generation).toBe(2)
    expect(after.workerKey).not.toBe(key.stdout.trim())
  })

  it('run queues a job and status --wait follows it to COMPLETED', async () => {
    const run = await jobs(['run', served, '--input', '{"echo":1}', '--json'])
    expect(run.code, run.stderr).toBe(0)
    const queued = JSON.parse(run.stdout) as { id: string; status: string }
    expect(queued).toEqual({ id: expect.stringMatching(UUID), status: 'IN_QUEUE' })
    const status = await jobs(['status', served, queued.id, '--wait', '--json'])
    expect(status.code, status.stderr).toBe(0)
    expect(JSON.parse(status.stdout)).toMatchObject({
      id: queued.id,
      status: 'COMPLETED',
      output: { echo: 1 },
      workerId: 'cli-worker',
    })
    const human = await jobs(['run', served, '--input', '{"echo":2}'])
    expect(human.stdout).toMatch(new RegExp(`^Queued job ${UUID.source} \\(IN_QUEUE\\)\\.\\n$`))
    const table = await jobs(['status', served, queued.id])
    expect(table.code, table.stderr).toBe(0)
    expect(table.stdout).toMatch(/^ID\s+STATUS\s+DELAY\s+EXECUTION\s+WORKER\n/)
    expect(table.stdout).toContain('COMPLETED')
    expect(table.stdout).toContain('output: {"echo":1}')
  })

  it('runsync takes the input from a file or standard input, with the policy and webhook', async () => {
    const file = path.join(dir, 'input.json')
    writeFileSync(file, '{"echo":"file"}\n')
    const fromFile = await jobs([
      'runsync',
      served,
      '--input-file',
      file,
      '--webhook',
      'https://hooks.example.com/hook',
      '--execution-timeout',
      '60000',
      '--ttl',
      '120000',
      '--low-priority',
      '--wait',
      '20000',
    ])
    expect(fromFile.code, fromFile.stderr).toBe(0)
    expect(fromFile.stdout).toMatch(/^ID\s+STATUS/)
    expect(fromFile.stdout).toMatch(/sync-\S+\s+COMPLETED/)
    expect(fromFile.stdout).toContain('output: {"echo":"file"}')
    expect(worker.taken.at(-1)).toMatchObject({
      input: { echo: 'file' },
      webhook: 'https://hooks.example.com/hook',
    })

    const fromStdin = await jobs(
      ['runsync', served, '--input-file', '-', '--json'],
      '{"echo":"stdin"}',
    )
    expect(fromStdin.code, fromStdin.stderr).toBe(0)
    expect(JSON.parse(fromStdin.stdout)).toMatchObject({
      status: 'COMPLETED',
      output: { echo: 'stdin' },
    })

    // The policy reaches the server: its bounds answer.
    const ttl = await jobs(['run', served, '--input', '{}', '--ttl', '5'])
    expect(ttl.code).toBe(2)
    expect(ttl.stderr).toContain('body.policy.ttl: must be between 10000 and 604800000')
    const timeout = await jobs(['run', served, '--input', '{}', '--execution-timeout', '1'])
    expect(timeout.code).toBe(2)
    expect(timeout.stderr).toContain('body.policy.executionTimeout')
  })

  it('runsync exits non-zero when the job fails; retry requeues it', async () => {
    const failed = await jobs(['runsync', served, '--input', '{"fail":"boom"}', '--json'])
    expect(failed.code).toBe(1)
    const job = JSON.parse(failed.stdout) as { id: string }
    expect(job).toMatchObject({ status: 'FAILED', error: 'boom' })
    // With --json the error is JSON too (docs/cli.md, "Scripting").
    expect(JSON.parse(failed.stderr)).toEqual({
      error: { message: `job ${job.id} ended FAILED: boom`, exitCode: 1 },
    })
    const retried = await jobs(['retry', served, job.id])
    expect(retried.code, retried.stderr).toBe(0)
    expect(retried.stdout).toBe(`Requeued job ${job.id} (IN_QUEUE).\n`)
    const again = await jobs(['status', served, job.id, '--wait', '10000'])
    expect(again.code).toBe(1)
    expect(again.stderr).toBe(`podyard: job ${job.id} ended FAILED: boom\n`)
  })

  it('stream prints each chunk as a JSON line until the job ends', async () => {
    const run = await jobs(['run', served, '--input', '{"chunks":[1,"two",{"three":3}]}', '--json'])
    const { id } = JSON.parse(run.stdout) as { id: string }
    const stream = await jobs(['stream', served, id])
    expect(stream.code, stream.stderr).toBe(0)
    expect(stream.stdout).toBe('1\n"two"\n{"three":3}\n')
  })

  it('cancel and health on an endpoint without workers', async () => {
    const ids: string[] = []
    for (let i = 0; i < 3; i++) {
      const run = await jobs(['run', idle, '--input', `{"n":${i}}`, '--json'])
      ids.push((JSON.parse(run.stdout) as { id: string }).id)
    }
    const cancelled = await jobs(['cancel', idle, ids[0]!])
    expect(cancelled.code, cancelled.stderr).toBe(0)
    expect(cancelled.stdout).toBe(`Cancelled job ${ids[0]}.\n`)
    const finished = await jobs(['runsync', served, '--input', '{}', '--json'])
    const finishedId = (JSON.parse(finished.stdout) as { id: string }).id
    const late = await jobs(['cancel', served, finishedId])
    expect(late.code, late.stderr).toBe(0)
    expect(late.stdout).toBe(`Job ${finishedId} had already ended: COMPLETED.\n`)
    const health = await jobs(['health', idle])
    expect(health.code, health.stderr).toBe(0)
    expect(health.stdout).toMatch(/^jobs: +completed=0 failed=0 inProgress=0 inQueue=2 retried=0\n/)
    expect(health.stdout).toMatch(/\nworkers: .*idle=0.*running=0/)
    const healthJson = JSON.parse((await jobs(['health', idle, '--json'])).stdout) as {
      jobs: Json
    }
    expect(healthJson.jobs).toMatchObject({ inQueue: 2 })
  })

  it('waiting commands exit non-zero unless the job COMPLETED; purge removes the queued jobs', async () => {
    const quiet = await createEndpoint('quiet')
    const ids: string[] = []
    for (let i = 0; i < 2; i++) {
      const run = await jobs(['run', quiet, '--input', `{"n":${i}}`, '--json'])
      ids.push((JSON.parse(run.stdout) as { id: string }).id)
    }
    await jobs(['cancel', quiet, ids[0]!])

    const waited = await jobs(['status', quiet, ids[0]!, '--wait'])
    expect(waited.code).toBe(1)
    expect(waited.stderr).toBe(`podyard: job ${ids[0]} ended CANCELLED\n`)
    const pending = await jobs(['runsync', quiet, '--input', '{}', '--wait', '1000', '--json'])
    expect(pending.code).toBe(1)
    const still = JSON.parse(pending.stdout) as { id: string; status: string }
    expect(still).toEqual({ id: expect.stringMatching(/^sync-/), status: 'IN_QUEUE' })
    expect(pending.stderr).toContain(
      `job ${still.id} is still IN_QUEUE after the wait; follow it with: podyard jobs status ${quiet} ${still.id} --wait`,
    )

    const purged = await jobs(['purge', quiet])
    expect(purged.code, purged.stderr).toBe(0)
    // The other queued job and the unfinished runsync one.
    expect(purged.stdout).toBe('Removed 2 queued job(s).\n')
    const gone = await jobs(['status', quiet, ids[1]!])
    expect(gone.code).toBe(4)
    expect(gone.stderr).toBe(
      `podyard: 404 Not Found: job ${ids[1]} not found (unknown, expired or deleted)\n`,
    )
  })

  it('runsync says on stderr what it waits for: the job, the ready workers, why workers fail and their last lines', async () => {
    const response = await platform.call('/v2/serverless', {
      method: 'POST',
      json: {
        name: 'crashing',
        image: 'worker:1',
        // A worker whose interpreter is not there (as a sandbox that hides it): it exits with
        // the shell's 127 before asking for a job.
        args: `echo "loading the handler"; no-such-interpreter handler.py`,
        cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
        workers: { min: 1, max: 1 },
      },
    })
    expect(response.status).toBe(201)
    const crashing = ((await response.json()) as { id: string }).id
    let backoff: { lastFailure: Json } | undefined
    for (let tries = 0; ; tries++) {
      const health = (await (await platform.call(`/v2/${crashing}/health`)).json()) as Json
      backoff = health.startBackoff as typeof backoff
      if (backoff) break
      if (tries > 200) throw new Error(`no backoff: ${JSON.stringify(health)}`)
      await sleep(100)
    }
    // Over HTTP: /health and the workers list say why, with the failed worker's last lines.
    const notFound = expect.stringMatching(/no-such-interpreter: (command )?not found$/)
    expect(backoff!.lastFailure).toEqual({
      workerId: expect.any(String),
      reason: 'exited with code 127 (command not found) before asking for a job',
      at: expect.any(String),
      lastLines: ['loading the handler', notFound],
    })
    const listed = (await (await platform.call(`/v2/serverless/${crashing}/workers`)).json()) as {
      startBackoff: { lastFailure: Json }
    }
    expect(listed.startBackoff.lastFailure.lastLines).toEqual(['loading the handler', notFound])

    const waited = await jobs(['runsync', crashing, '--input', '{}', '--wait', '3000'])
    expect(waited.code).toBe(1)
    const job = /^(sync-\S+)\s+IN_QUEUE/m.exec(waited.stdout)
    expect(job, waited.stdout).not.toBeNull()
    expect(waited.stderr).toMatch(
      new RegExp(
        `^waiting for job ${job![1]} \\(IN_QUEUE\\): 0 ready worker\\(s\\); the last worker exited with code 127 \\(command not found\\) before asking for a job \\(\\d+ failed in a row\\); (next worker starts in \\d+ s|a worker is being started)\n` +
          `the last lines of worker (\\w+) \\(all: podyard endpoints worker-logs ${crashing} \\2\\):\n` +
          `  \\| loading the handler\n  \\| .*no-such-interpreter: (command )?not found\n`,
      ),
    )
    expect(waited.stderr).toContain(`job ${job![1]} is still IN_QUEUE after the wait`)
    // stdout stays the job alone: --json parses.
    const asJson = await jobs(['runsync', crashing, '--input', '{}', '--wait', '4000', '--json'])
    expect(JSON.parse(asJson.stdout)).toMatchObject({ status: 'IN_QUEUE' })
    expect(asJson.stderr).toContain('before asking for a job')
    expect(asJson.stderr).toContain('  | loading the handler\n')

    const health = await jobs(['health', crashing])
    expect(health.code, health.stderr).toBe(0)
    expect(health.stdout).toMatch(
      /\nfailing: \d+ worker\(s\) in a row, the last \w+ exited with code 127 \(command not found\) before asking for a job at \S+; next start at \S+\nthe last lines of worker \w+ .*:\n {2}\| loading the handler\n {2}\| .*not found\n$/,
    )
    await platform.call(`/v2/serverless/${crashing}`, { method: 'DELETE' })
  })

  it('prints the problem and exits non-zero on bad input or a failing call', async () => {
    // Local input mistakes are usage errors (2), like an unknown option.
    const none = await jobs(['run', served])
    expect(none.code).toBe(2)
    expect(none.stderr).toContain("give the job input as --input '<json>' or --input-file <path>")
    const bad = await jobs(['run', served, '--input', 'nope'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/^podyard: --input: not valid JSON: /)
    const both = await jobs(['run', served, '--input', '{}', '--input-file', '-'])
    expect(both.code).toBe(2)
    expect(both.stderr).toContain('give either --input or --input-file, not both')
    const missing = await jobs(['run', served, '--input-file', path.join(dir, 'nope.json')])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toMatch(/--input-file .*nope\.json: cannot read it: ENOENT/)
    const notObject = await jobs(['run', served, '--input', '[1]'])
    expect(notObject.code).toBe(2)
    expect(notObject.stderr).toContain('body.input: must be a JSON object')
    const ttl = await jobs(['run', served, '--input', '{}', '--ttl', 'soon'])
    expect(ttl.code).not.toBe(0)
    expect(ttl.stderr).toContain('expected milliseconds')
    const unknown = await jobs(['health', 'nosuchendpoint'])
    expect(unknown.code).toBe(4)
    expect(unknown.stderr).toContain('endpoint nosuchendpoint not found')
    const wrongKey = await runCli([
      'jobs',
      'health',
      served,
      '--url',
      platform.url,
      '--api-key',
      'pyd_wrong-key-0123456789',
    ])
    expect(wrongKey.code).toBe(3)
    expect(wrongKey.stderr).toContain('401')
  })
})
