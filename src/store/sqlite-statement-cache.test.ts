import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { withStatementCache } from './sqlite-statement-cache.js'

describe('withStatementCache', () => {
  it('reuses a prepared statement per SQL text, within its size', () => {
    const database = new Database(':memory:')
    const cached = withStatementCache(database, 2)
    const first = cached.prepare('select 1 as x')
    expect(cached.prepare('select 1 as x')).toBe(first)
    expect(first.all([])).toEqual([{ x: 1 }])
    cached.prepare('select 2 as x')
    cached.prepare('select 3 as x')
    // The oldest text was dropped to stay within 2.
    expect(cached.prepare('select 1 as x')).not.toBe(first)
    cached.close()
  })

  it('prepares a fresh statement while the cached one is still iterating', () => {
    const database = new Database(':memory:')
    const cached = withStatementCache(database)
    const sql = 'select 1 as x union all select 2'
    const iterating = cached.prepare(sql)
    const rows = iterating.iterate([])
    rows.next()
    const other = cached.prepare(sql)
    expect(other).not.toBe(iterating)
    expect(other.all([])).toEqual([{ x: 1 }, { x: 2 }])
    rows.return?.()
    expect(cached.prepare(sql)).toBe(iterating)
    cached.close()
  })
})
