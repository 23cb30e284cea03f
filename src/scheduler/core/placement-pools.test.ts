import { describe, expect, it } from 'vitest'
import {
  parseLabelConstraint,
  type LabelConstraint,
} from '../../domain/catalog/placement-constraints.js'
import {
  alloc,
  cpu,
  cpuHost,
  failed,
  gpu,
  gpuHost,
  H100,
  placed,
  reasonOf,
  run,
} from '../../../test/support/placement-fixtures.js'

const labels = (...texts: string[]): LabelConstraint[] =>
  texts.map((t) => parseLabelConstraint(t) as LabelConstraint)

describe('label constraints', () => {
  it('reads key=value, key!=value and numeric comparisons, and says what is wrong', () => {
    expect(parseLabelConstraint('ib=true')).toEqual({ key: 'ib', op: '=', value: 'true' })
    expect(parseLabelConstraint('driver>=550')).toEqual({ key: 'driver', op: '>=', value: '550' })
    expect(parseLabelConstraint('zone!=b')).toEqual({ key: 'zone', op: '!=', value: 'b' })
    expect(parseLabelConstraint('ib')).toMatch(/is not a label constraint/)
    expect(parseLabelConstraint('driver>new')).toBe(
      '"driver>new": > compares numbers, and "new" is not one',
    )
    expect(parseLabelConstraint('Bad Key=1')).toMatch(/is not a label key/)
  })
})

describe('place: pools and labels', () => {
  const pooled = gpuHost('pooled', 'US-KS-2', H100, 8, { labels: { pool: 'team-a' } })
  const open = gpuHost('open', 'US-KS-2', H100, 2, { labels: { driver: '535', ib: 'true' } })

  it('keeps a pool host for the accounts bound to its pool; a host in no pool takes anyone', () => {
    expect(placed(run([pooled, open], gpu(H100, 1))).hostId).toBe('open')
    // A bound account still takes open hosts; its pool holds what they cannot.
    expect(placed(run([pooled, open], gpu(H100, 1, { accountPools: ['team-a'] }))).hostId).toBe(
      'open',
    )
    expect(placed(run([pooled, open], gpu(H100, 4, { accountPools: ['team-a'] }))).hostId).toBe(
      'pooled',
    )
    const refused = failed(run([pooled], gpu(H100, 1, { accountPools: ['team-b'] })))
    expect(refused.detail).toBe(
      `no host in pool team-a is open to this account (it is bound to team-b), and no other host offers ${H100}`,
    )
    expect(reasonOf(refused, 'pooled')).toBe(
      'is in pool team-a, which this account is not bound to',
    )
  })

  it('tells an account asking for a closed pool that the pool is closed to it', () => {
    const asked = failed(run([pooled, open], gpu(H100, 1, { labels: labels('pool=team-a') })))
    expect(asked.detail).toBe(
      `no host in pool team-a is open to this account (it is bound to no pool), and no other host with pool=team-a offers ${H100}`,
    )
    expect(
      placed(
        run(
          [pooled, open],
          gpu(H100, 1, { labels: labels('pool=team-a'), accountPools: ['team-a'] }),
        ),
      ).hostId,
    ).toBe('pooled')
  })

  it('names closed pools beside a shortage of the open hosts', () => {
    const full = [alloc(open, [0, 1])]
    const result = failed(run([pooled, open], gpu(H100, 1), full))
    expect(result.detail).toBe(
      `no host has 1 free ${H100} (the hosts in pool team-a are not open to this account: it is bound to no pool)`,
    )
  })

  it('takes only hosts with the asked labels, comparing numbers as numbers', () => {
    const newer = gpuHost('newer', 'US-KS-2', H100, 8, { labels: { driver: '1000' } })
    expect(placed(run([open, newer], gpu(H100, 1, { labels: labels('driver>=550') }))).hostId).toBe(
      'newer',
    )
    expect(placed(run([open, newer], gpu(H100, 1, { labels: labels('ib!=false') }))).hostId).toBe(
      'open',
    )
    const unmet = failed(
      run([open, newer], gpu(H100, 1, { labels: labels('ib=true', 'driver>=550') })),
    )
    expect(unmet.detail).toBe(
      `no host has driver>=550 and ib=true among the hosts offering ${H100}`,
    )
    expect(reasonOf(unmet, 'open')).toBe(
      'does not have driver>=550 (its labels: driver=535, ib=true)',
    )
    expect(reasonOf(unmet, 'newer')).toBe('does not have ib=true (its labels: driver=1000)')
  })

  it('says the labels with a shortage of hosts that have them', () => {
    const full = [alloc(open, [0, 1])]
    const result = failed(run([open], gpu(H100, 1, { labels: labels('ib=true') }), full))
    expect(result.detail).toBe(`no host with ib=true has 1 free ${H100}`)
  })

  it('applies to CPU pods too', () => {
    const cpuPool = cpuHost('cpu-pool', 'US-KS-2', ['cpu3c'], 16, 64, { labels: { pool: 'x' } })
    expect(failed(run([cpuPool], cpu('cpu3c', 2))).detail).toBe(
      'no host in pool x is open to this account (it is bound to no pool), and no other host offers CPU flavor cpu3c',
    )
    expect(placed(run([cpuPool], cpu('cpu3c', 2, { accountPools: ['x'] }))).hostId).toBe('cpu-pool')
  })
})
