import { execFileSync } from 'node:child_process'
import { expect } from 'vitest'
import { otherAccountKey, startTestPlatform, type TestPlatform } from './platform.js'

/** The image of the docker log suites' pods: node and a shell. */
export const LOG_POD_IMAGE = 'podyard-conformance/plain:1'

/** The container of a pod (podyard.workload is its label); '' when there is none. */
export function containerOf(podId: string): string {
  return execFileSync(
    'docker',
    ['ps', '-aq', '--no-trunc', '--filter', `label=podyard.workload=${podId}`],
    { encoding: 'utf8' },
  ).trim()
}

/**
 * A platform on this machine's engine alone whose pods keep `logMaxMb` of log, and the key of
 * a member account (`email`) to create and read the pods with.
 */
export async function startDockerLogPlatform(
  logMaxMb: number,
  email: string,
): Promise<{ platform: TestPlatform; tenant: string }> {
  const platform = await startTestPlatform({
    fleet: 'none',
    driver: 'docker',
    workloadLogs: { maxMb: logMaxMb },
    // This engine (overlay2 on ext4) cannot size a container's disk; the log is the point here.
    containment: { acceptUnenforced: ['disk'] },
  })
  return { platform, tenant: await otherAccountKey(platform, email) }
}

/** A CPU pod of the member's that runs `args` (a shell line) in LOG_POD_IMAGE; its id. */
export async function createLogPod(
  platform: Pick<TestPlatform, 'call'>,
  tenant: string,
  name: string,
  args: string,
): Promise<string> {
  const created = await platform.call('/v2/pods', {
    method: 'POST',
    key: tenant,
    json: { name, image: LOG_POD_IMAGE, cpu: { id: 'cpu3c', vcpuCount: 2 }, args },
  })
  expect(created.status, await created.clone().text()).toBe(201)
  return ((await created.json()) as { id: string }).id
}

/**
 * A node script that writes numbered lines of about 500 bytes (`<n> xxx…`) in phases: the first
 * at once, phase k once /tmp/go-<k> exists in the container (`docker exec … touch`).
 */
export function phasedLogScript(phases: number[]): string {
  return [
    'const fs = require("fs")',
    'const pad = "x".repeat(460)',
    `const phases = ${JSON.stringify(phases)}`,
    'let n = 0',
    'let k = 0',
    'const tick = () => {',
    '  if (k < phases.length && (k === 0 || fs.existsSync("/tmp/go-" + k))) {',
    '    let chunk = ""',
    '    for (let j = 0; j < phases[k]; j++) {',
    '      n++',
    '      chunk += n + " " + pad + "\\n"',
    '      if (chunk.length > 65536) { fs.writeSync(1, chunk); chunk = "" }',
    '    }',
    '    if (chunk) fs.writeSync(1, chunk)',
    '    k++',
    '  }',
    '  setTimeout(tick, 50)',
    '}',
    'tick()',
  ].join('\n')
}

/** The number of the last line of each phase. */
export const phaseEnds = (phases: number[]) =>
  phases.map((_, k) => phases.slice(0, k + 1).reduce((a, b) => a + b, 0))

/** The number a pod's line starts with (NaN for others: the platform's notes). */
export const numberOf = (line: string) => Number(line.split(' ')[0])

export const range = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, k) => from + k)
