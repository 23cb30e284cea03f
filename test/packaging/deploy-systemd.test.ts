import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/load-config.js'
import { configKeys } from '../../src/config/schema.js'
import { repoRoot } from '../support/cli.js'

const unitFile = path.join(repoRoot, 'deploy', 'podyard.service')
const envFile = path.join(repoRoot, 'deploy', 'podyard.env')

/** `KEY=value` lines of an environment file, as systemd's EnvironmentFile= reads them. */
function environmentOf(text: string): Record<string, string> {
  const env: Record<string, string> = {}
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#')) continue
    const match = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line)
    if (!match) throw new Error(`not KEY=value: ${line}`)
    env[match[1]!] = match[2]!
  }
  return env
}

/** The unit's sections and keys (systemd's INI dialect: no quoting we use, no continuations). */
function sectionsOf(text: string): Map<string, Map<string, string>> {
  const sections = new Map<string, Map<string, string>>()
  let current: Map<string, string> | undefined
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue
    const header = /^\[(\w+)\]$/.exec(line)
    if (header) {
      current = new Map()
      sections.set(header[1]!, current)
      continue
    }
    const pair = /^(\w+)=(.*)$/.exec(line)
    if (!pair || !current) throw new Error(`not a key of a section: ${line}`)
    current.set(pair[1]!, pair[2]!)
  }
  return sections
}

const systemdAnalyze = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' })

describe('deploy/podyard.service and deploy/podyard.env', () => {
  it.runIf(systemdAnalyze.status === 0)('pass systemd-analyze verify, without a warning', () => {
    const verified = spawnSync('systemd-analyze', ['verify', unitFile], { encoding: 'utf8' })
    expect(verified.stdout + verified.stderr).toBe('')
    expect(verified.status).toBe(0)
  })

  it('runs podyard serve with the environment file and leaves its pods to the next start', () => {
    const unit = sectionsOf(readFileSync(unitFile, 'utf8'))
    expect([...unit.keys()]).toEqual(['Unit', 'Service', 'Install'])
    const service = unit.get('Service')!
    expect(service.get('ExecStart')).toBe('/usr/bin/node /opt/podyard/bin/podyard.js serve')
    expect(service.get('EnvironmentFile')).toBe('/etc/podyard/podyard.env')
    // Only the server is stopped: its pods and workers are adopted by the next start.
    expect(service.get('KillMode')).toBe('process')
    expect(service.get('RestartPreventExitStatus')).toBe('2')
    expect(unit.get('Install')!.get('WantedBy')).toBe('multi-user.target')
  })

  it('set only configuration keys podyard knows, with values it accepts', () => {
    const env = environmentOf(readFileSync(envFile, 'utf8'))
    const known = new Set(configKeys.map((key) => key.env))
    expect(Object.keys(env).filter((name) => !known.has(name))).toEqual([])
    expect(Object.keys(env).length).toBeGreaterThan(5)
    const config = loadConfig({ env, cwd: repoRoot, flags: {} })
    expect(config.host).toBe('0.0.0.0')
    expect(config.storeUrl).toMatch(/^postgres:\/\//)
    expect(config.logFormat).toBe('json')
  })
})
