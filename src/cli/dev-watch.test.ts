import { describe, expect, it } from 'vitest'
import { restartsOnChange } from './dev-watch.js'

describe('restartsOnChange (podyard dev --watch)', () => {
  const folder = '/work/app'
  const data = '/work/app/.data'

  it('restarts for code and configuration', () => {
    for (const name of [
      'handler.py',
      'lib/model.ts',
      'util.mjs',
      'config.yaml',
      'requirements.txt',
    ]) {
      expect(restartsOnChange(name, folder, data), name).toBe(true)
    }
  })

  it('ignores what a handler writes, dependencies, hidden files, the test job and the data directory', () => {
    for (const name of [
      'output.png',
      'pid-123',
      'run.log',
      'node_modules/x/index.js',
      '__pycache__/handler.cpython-311.pyc',
      '.git/index',
      '.handler.py.swp',
      'test_input.json',
      '.data/podyard.db',
    ]) {
      expect(restartsOnChange(name, folder, data), name).toBe(false)
    }
    expect(restartsOnChange('kept/state.json', folder, '/work/app/kept')).toBe(false)
  })
})
