import { describe, expect, it } from 'vitest'
import { probeHostOnce } from './host-probes.js'

describe('probeHostOnce', () => {
  let next = 0
  const key = () => `test probe ${next++}`

  it('makes a trial that succeeded once per key', async () => {
    const k = key()
    let trials = 0
    const probe = async () => ({ ok: true, trial: ++trials })
    const first = await probeHostOnce(k, probe, (answer) => answer.ok)
    const second = await probeHostOnce(k, probe, (answer) => answer.ok)
    expect([first, second, trials]).toEqual([{ ok: true, trial: 1 }, { ok: true, trial: 1 }, 1])
    // Another key (other inputs: another PATH, another user) is its own trial.
    expect(await probeHostOnce(key(), probe, (answer) => answer.ok)).toEqual({ ok: true, trial: 2 })
  })

  it('tries again after a failure, and after a trial that threw', async () => {
    const k = key()
    const answers = [
      () => Promise.resolve({ ok: false }),
      () => Promise.reject(new Error('ip: not found')),
      () => Promise.resolve({ ok: true }),
    ]
    let trials = 0
    const probe = () => answers[trials++]!()
    expect(await probeHostOnce(k, probe, (answer) => answer.ok)).toEqual({ ok: false })
    await expect(probeHostOnce(k, probe, (answer) => answer.ok)).rejects.toThrow('ip: not found')
    expect(await probeHostOnce(k, probe, (answer) => answer.ok)).toEqual({ ok: true })
    expect(await probeHostOnce(k, probe, (answer) => answer.ok)).toEqual({ ok: true })
    expect(trials).toBe(3)
  })

  it('gives callers asking while a trial runs that same trial', async () => {
    const k = key()
    let trials = 0
    const probe = async () => {
      trials++
      await new Promise((resolve) => setTimeout(resolve, 10))
      return { ok: false }
    }
    const answers = await Promise.all([1, 2, 3].map(() => probeHostOnce(k, probe, () => false)))
    expect(answers).toEqual([{ ok: false }, { ok: false }, { ok: false }])
    expect(trials).toBe(1)
  })
})
