import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import {
  LocalTestInputError,
  localTestJob,
  localTestSource,
  runLocalTest,
  testInputArgument,
} from './local-test.js'

const dirs: string[] = []
const tempDir = () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'podyard-local-test-'))
  dirs.push(dir)
  return dir
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

describe('testInputArgument', () => {
  it('reads --test_input <json> and --test_input=<json>', () => {
    expect(testInputArgument(['--test_input', '{"input":1}'])).toBe('{"input":1}')
    expect(testInputArgument(['x', '--test_input={"input":2}'])).toBe('{"input":2}')
    expect(testInputArgument(['--rp_log_level', 'DEBUG'])).toBeUndefined()
  })
  it('refuses --test_input without a value', () => {
    expect(() => testInputArgument(['--test_input'])).toThrow(LocalTestInputError)
  })
})

describe('localTestSource: runpod-python mode selection', () => {
  it('--test_input wins even with a job-take URL', () => {
    expect(localTestSource(['--test_input', '{"input":{}}'], true, tempDir())).toEqual({
      from: '--test_input',
      text: '{"input":{}}',
    })
  })
  it('test_input.json only without a job-take URL', () => {
    const dir = tempDir()
    writeFileSync(path.join(dir, 'test_input.json'), '{"input":{"a":1}}')
    expect(localTestSource([], false, dir)).toEqual({
      from: 'test_input.json',
      text: '{"input":{"a":1}}',
    })
    expect(localTestSource([], true, dir)).toBeUndefined()
    expect(localTestSource([], false, tempDir())).toBeUndefined()
  })
})

describe('localTestJob', () => {
  it('keeps every key, with id local_test unless given', () => {
    expect(localTestJob({ from: '--test_input', text: '{"input":{"a":1},"webhook":"w"}' })).toEqual(
      { id: 'local_test', input: { a: 1 }, webhook: 'w' },
    )
    expect(localTestJob({ from: '--test_input', text: '{"id":"j1","input":"x"}' }).id).toBe('j1')
  })
  it('refuses what is not JSON, not an object, or has no input', () => {
    const job = (text: string) => () => localTestJob({ from: 'test_input.json', text })
    expect(job('{')).toThrow(/test_input.json is not JSON/)
    expect(job('[1]')).toThrow('test_input.json must be an object such as {"input": {...}}')
    expect(job('{"inputs":{}}')).toThrow('test_input.json has no "input": nothing to run')
  })
})

describe('runLocalTest', () => {
  const run = async (handler: Parameters<typeof runLocalTest>[0], aggregate = false) => {
    const out: string[] = []
    const log: string[] = []
    const report = await runLocalTest(
      handler,
      { id: 'local_test', input: { n: 2 } },
      new AbortController().signal,
      { returnAggregateOutput: aggregate, out: (line) => out.push(line), log: (l) => log.push(l) },
    )
    expect(out).toEqual([JSON.stringify(report)])
    return { report, log }
  }

  it('prints the result as a job-done body with its status', async () => {
    const { report, log } = await run(async (job, context) => {
      await context.progress({ step: 1 })
      return { doubled: (job.input as { n: number }).n * 2 }
    })
    expect(report).toMatchObject({ id: 'local_test', status: 'COMPLETED', output: { doubled: 4 } })
    expect(log).toContain('progress: {"step":1}')
  })

  it('fails with runpod-python-shaped errors: thrown and returned', async () => {
    const thrown = await run(() => {
      throw new TypeError('bad')
    })
    expect(thrown.report.status).toBe('FAILED')
    expect(JSON.parse(thrown.report.error as string)).toMatchObject({
      error_type: 'TypeError',
      error_message: 'bad',
      worker_id: 'local',
    })
    const returned = await run(() => ({ error: 'nope' }))
    expect(returned.report).toMatchObject({ status: 'FAILED', error: 'nope' })
  })

  it('logs stream chunks and aggregates them when asked', async () => {
    const generator = async function* () {
      yield 'a'
      yield 'b'
    }
    const plain = await run(generator)
    expect(plain.report).toMatchObject({ status: 'COMPLETED', output: [] })
    expect(plain.log).toEqual(
      expect.arrayContaining(['stream chunk 0: "a"', 'stream chunk 1: "b"']),
    )
    expect((await run(generator, true)).report.output).toEqual(['a', 'b'])
  })
})
