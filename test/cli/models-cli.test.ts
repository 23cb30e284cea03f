import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { formatUsd } from '../../src/cli/billing-commands.js'
import { nanoToUsd } from '../../src/domain/billing/credits.js'
import { maxPriceNano } from '../../src/domain/models/model.js'
import { runCli } from '../support/cli.js'
import { json } from '../support/http.js'
import { startTestPlatform, TEST_ADMIN_KEY, type TestPlatform } from '../support/platform.js'

/**
 * `podyard models list|run` (docs/public-endpoints.md "CLI") as a real process
 * against a real server whose autoscaler runs the reference model workers as processes
 * (the settings of test/serverless/public-models.test.ts).
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const IMAGE = 'podyard-reference-image'
const TEXT = 'podyard-reference-text'

// A model's first job waits for its worker to start (a few seconds on a busy 2-core machine).
describe('podyard models', { timeout: 120_000 }, () => {
  let platform: TestPlatform
  const flags = () => ['--url', platform.url, '--api-key', TEST_ADMIN_KEY]
  const models = (args: string[], stdin?: string) =>
    runCli(['models', ...args, ...flags()], {}, stdin === undefined ? {} : { stdin })

  beforeAll(async () => {
    platform = await startTestPlatform({
      workers: {
        intervalMs: 200,
        pingIntervalMs: 1000,
        heartbeatTimeoutMs: 10_000,
        startTimeoutMs: 30_000,
        stopGraceMs: 2000,
        unhealthyRetentionMs: 1500,
      },
    })
    // Model jobs are paid from the caller's balance, which starts at $0.
    const me = await json<{ id: string }>(await platform.call('/v2/account'))
    await json(
      await platform.call(`/v2/admin/accounts/${me.id}/credits`, {
        method: 'POST',
        json: { amount: 1 },
      }),
    )
  })
  afterAll(async () => {
    await platform?.close()
  })

  it('list: id, kind, price rule, whether it is a reference model, input fields', async () => {
    const table = await models(['list'])
    expect(table.code, table.stderr).toBe(0)
    const lines = table.stdout.trimEnd().split('\n')
    expect(lines[0]).toMatch(/^ID\s+KIND\s+PRICE\s+REFERENCE\s+INPUT \(\* required\)\s+NAME$/)
    const row = (id: string) => lines.find((line) => line.startsWith(`${id} `))
    expect(row(IMAGE)).toMatch(
      /^podyard-reference-image\s+image\s+\$0\.0024\/megapixel\s+yes \(not AI\)\s+prompt\*, width, height, size, seed\s+podyard reference image renderer$/,
    )
    expect(row(TEXT)).toMatch(
      /^podyard-reference-text\s+text\s+\$0\.0002\/1k-tokens\s+yes \(not AI\)\s+prompt, messages, max_tokens\s+/,
    )
    const asJson = await models(['list', '--json'])
    expect(asJson.code, asJson.stderr).toBe(0)
    expect(JSON.parse(asJson.stdout)).toEqual(await json(await platform.call('/v2/catalog/models')))
  })

  it('run an image model: prints the image URL and the cost, charged to the account', async () => {
    const input = { prompt: 'A lighthouse at dusk', width: 256, height: 128 }
    const cost = nanoToUsd(
      maxPriceNano({ unit: 'megapixel', usd: 0.0024 }, { kind: 'image', ...input }),
    )
    const run = await models(['run', IMAGE, '--input', JSON.stringify(input), '--wait', '60000'])
    expect(run.code, run.stderr).toBe(0)
    const lines = run.stdout.trimEnd().split('\n')
    expect(lines[0]).toMatch(/^Job sync-\S+ COMPLETED \(delay \d+ ms, execution \d+ ms\)\.$/)
    expect(lines[1]).toMatch(
      new RegExp(
        `^image_url: ${platform.url}/v2/objects/images/sync-\\S+\\.png\\?expires=\\d+&signature=\\S+$`,
      ),
    )
    expect(lines[2]).toBe(`cost: ${formatUsd(cost)}`)
    expect(lines).toHaveLength(3)
    const image = await fetch(lines[1]!.slice('image_url: '.length))
    expect(image.status).toBe(200)
    expect(image.headers.get('content-type')).toBe('image/png')

    // The charge is in the public endpoints' billing report.
    const report = await runCli(['billing', 'endpoints', '--endpoint', IMAGE, '--json', ...flags()])
    expect(report.code, report.stderr).toBe(0)
    const records = (JSON.parse(report.stdout) as Json).records as Json[]
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({ endpointId: IMAGE, totalAmount: cost })
  })

  it('run a text model with the input from standard input; --json prints the job', async () => {
    const stdin = JSON.stringify({ prompt: 'Say something about rivers', max_tokens: 16 })
    const run = await models(['run', TEXT, '--input-file', '-', '--wait', '60000', '--json'], stdin)
    expect(run.code, run.stderr).toBe(0)
    const job = JSON.parse(run.stdout) as Json
    expect(job).toMatchObject({ status: 'COMPLETED', output: { cost: expect.any(Number) } })
    expect(job.output.text).toMatch(/^Reference answer to "Say something about rivers":/)
    const human = await models(['run', TEXT, '--input', stdin, '--wait', '60000'])
    expect(human.code, human.stderr).toBe(0)
    expect(human.stdout).toContain(`\ntext: ${job.output.text}\ncost: $0.`)
  })

  it('prints the problem and exits non-zero on bad input or an unknown model', async () => {
    const bad = await models(['run', IMAGE, '--input', '{"width":100}'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/^podyard: 400 Bad Request: the request is not valid: /)
    expect(bad.stderr).toContain('input.prompt: required')
    expect(bad.stderr).toContain('input.width: must be a multiple of 8, got 100')
    const none = await models(['run', IMAGE])
    expect(none.code).toBe(2)
    expect(none.stderr).toContain("--input '<json>' or --input-file <path>")
    const notJson = await models(['run', IMAGE, '--input', 'a red fox'])
    expect(notJson.code).toBe(2)
    expect(notJson.stderr).toMatch(/^podyard: --input: not valid JSON: /)
    const wait = await models(['run', IMAGE, '--input', '{}', '--wait', 'soon'])
    expect(wait.code).not.toBe(0)
    expect(wait.stderr).toContain('expected milliseconds')
    const unknown = await models(['run', 'no-such-model', '--input', '{"prompt":"x"}'])
    expect(unknown.code).toBe(4)
    expect(unknown.stderr).toMatch(/^podyard: 404 /)
  })
})
