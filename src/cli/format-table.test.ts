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

describe('formatTable with wide characters', () => {
  /** Where each column starts on screen, in terminal columns, found by the cell's text. */
  const columnOf = (line: string, text: string) => {
    let width = 0
    for (const char of line.slice(0, line.indexOf(text))) {
      width +=
        /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\uff00-\uff60\u{1f300}-\u{1faff}]/u.test(
          char,
        )
          ? 2
          : 1
    }
    return width
  }

  it('counts East Asian wide characters as two columns', () => {
    const lines = formatTable(
      ['NAME', 'STATUS'],
      [
        ['学習ジョブ', 'RUNNING'],
        ['train', 'EXITED'],
        ['모델', 'RUNNING'],
      ],
    ).split('\n')
    expect(lines).toEqual([
      'NAME        STATUS',
      '学習ジョブ  RUNNING',
      'train       EXITED',
      '모델        RUNNING',
    ])
    expect(
      lines.map((line, i) => columnOf(line, ['STATUS', 'RUNNING', 'EXITED', 'RUNNING'][i]!)),
    ).toEqual([12, 12, 12, 12])
  })

  it('counts emoji as two columns and combining marks as none', () => {
    const lines = formatTable(
      ['NAME', 'GPUS'],
      [
        ['🚀 rocket', 2],
        ['cafe\u0301', 10],
        ['plain', 1],
      ],
    ).split('\n')
    expect(lines).toEqual([
      'NAME       GPUS',
      '🚀 rocket     2',
      'cafe\u0301         10',
      'plain         1',
    ])
  })

  it('right-aligns numbers after a wide header', () => {
    expect(formatTable(['数量'], [[5], [12]])).toBe('数量\n   5\n  12')
  })
})
