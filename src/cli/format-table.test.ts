import { describe, expect, it } from 'vitest'
import { formatTable } from './format-table.js'

describe('formatTable', () => {
  it('pads every column to its widest cell and right-aligns numbers and amounts', () => {
    const table = formatTable(
      ['ID', 'NAME', 'PODS', 'COST'],
      [
        ['a1', 'short', 3, '$1.50'],
        ['b22', 'a longer name', 120, '$12.00'],
        ['c', null, 7, null],
      ],
    )
    expect(table.split('\n')).toEqual([
      'ID   NAME           PODS    COST',
      'a1   short             3   $1.50',
      'b22  a longer name   120  $12.00',
      'c    -                 7       -',
    ])
  })

  it('keeps a column left-aligned when one cell is not a number', () => {
    expect(formatTable(['N'], [[1], ['two']])).toBe('N\n1\ntwo')
  })

  it('prints only the headers for no rows', () => {
    expect(formatTable(['ID', 'NAME'], [])).toBe('ID  NAME')
  })
})
