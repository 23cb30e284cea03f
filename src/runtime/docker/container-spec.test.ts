import { describe, expect, it } from 'vitest'
import {
  containerName,
  exitCodeOf,
  logPositionOf,
  MAX_PULL_LOG_LINES,
  MERGE_STDERR,
  pullLogLabel,
  workloadStateOf,
  type ContainerInspection,
} from './container-spec.js'

it('the stderr merge leaves a command with its own redirections working', async () => {
  const { spawnSync } = await import('node:child_process')
  const run = spawnSync('/bin/sh', ['-c', `${MERGE_STDERR}echo one; echo two >&2; exit 4`])
  expect(run.stdout.toString()).toBe('one\ntwo\n')
  expect(run.stderr.toString()).toBe('')
  expect(run.status).toBe(4)
})

describe('logPositionOf', () => {
  it('reads a container without the labels, or with damaged ones, as starting at 0', () => {
    expect(logPositionOf({})).toEqual({ base: 0, pullLines: [] })
    expect(logPositionOf(null)).toEqual({ base: 0, pullLines: [] })
    expect(
      logPositionOf({ 'podyard.log-base': '-3', 'podyard.pull-log': '{"not":"a list"' }),
    ).toEqual({ base: 0, pullLines: [] })
    expect(
      logPositionOf({ 'podyard.pull-log': '[{"seq":1,"ts":"t","line":"ok"},{"seq":"x"}]' }),
    ).toEqual({ base: 0, pullLines: [{ seq: 1, ts: 't', line: 'ok' }] })
  })

  it('keeps the last MAX_PULL_LOG_LINES pull lines, with their numbers', () => {
    const lines = Array.from({ length: MAX_PULL_LOG_LINES + 5 }, (_, i) => ({
      seq: i + 1,
      ts: '2026-01-02T03:04:05.000Z',
      line: `layer ${i}: Pull complete`,
    }))
    const kept = logPositionOf({ 'podyard.pull-log': pullLogLabel(lines) }).pullLines
    expect(kept).toHaveLength(MAX_PULL_LOG_LINES)
    expect(kept[0]!.seq).toBe(6)
    expect(kept.at(-1)!.seq).toBe(MAX_PULL_LOG_LINES + 5)
  })
})

describe('containerName', () => {
  it('is unique per server and workload, in the characters Docker allows', () => {
    expect(containerName('srv1', 'pod1')).toBe('podyard-srv1-pod1')
    expect(containerName('a b', 'c/d')).toBe('podyard-a_b-c_d')
  })
})

describe('workloadStateOf', () => {
  const labels = { kind: 'pod', 'podyard.server': 'srv1', 'podyard.workload': 'pod1' }
  function inspection(state: Partial<ContainerInspection['State']>): ContainerInspection {
    return {
      Config: { Labels: labels },
      State: {
        Running: false,
        ExitCode: 0,
        StartedAt: '2026-01-02T03:04:05.123456789Z',
        FinishedAt: '0001-01-01T00:00:00Z',
        ...state,
      },
    }
  }

  it('reports a running container without its podyard labels', () => {
    expect(workloadStateOf(inspection({ Running: true }))).toEqual({
      id: 'pod1',
      phase: 'running',
      startedAt: '2026-01-02T03:04:05.123Z',
      exitCode: null,
      finishedAt: null,
      labels: { kind: 'pod' },
    })
  })

  it("returns the spec's labels only, not those the image added", () => {
    const state = workloadStateOf({
      Config: {
        Labels: {
          ...labels,
          'org.opencontainers.image.version': '22.04',
          'podyard.spec-labels': '["kind"]',
        },
      },
      State: { Running: true, ExitCode: 0, StartedAt: '', FinishedAt: '' },
    })
    expect(state.labels).toEqual({ kind: 'pod' })
  })

  it('reports an exited container with its exit code and finish time', () => {
    expect(
      workloadStateOf(inspection({ ExitCode: 3, FinishedAt: '2026-01-02T03:05:00.5Z' })),
    ).toMatchObject({ phase: 'exited', exitCode: 3, finishedAt: '2026-01-02T03:05:00.500Z' })
  })

  it('reports death by a signal (128 + n) as a null exit code', () => {
    expect(exitCodeOf(0)).toBe(0)
    expect(exitCodeOf(128)).toBe(128)
    expect(exitCodeOf(137)).toBeNull()
    expect(exitCodeOf(143)).toBeNull()
    expect(exitCodeOf(255)).toBe(255)
  })

  it('reports an exited container the kernel killed for its memory limit as out of memory', () => {
    const killed = workloadStateOf(inspection({ ExitCode: 137, OOMKilled: true }))
    expect(killed).toMatchObject({ phase: 'exited', exitCode: null, outOfMemory: true })
    expect(workloadStateOf(inspection({ ExitCode: 137, OOMKilled: false }))).not.toHaveProperty(
      'outOfMemory',
    )
    // Still running (a child was killed, the command goes on): told when it exits.
    expect(workloadStateOf(inspection({ Running: true, OOMKilled: true }))).not.toHaveProperty(
      'outOfMemory',
    )
  })
})
