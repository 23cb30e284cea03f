import { describe, expect, it } from 'vitest'
import { PullBytes } from './image-pulls.js'

describe('PullBytes', () => {
  it("sums the layers' downloads as the engine reports them, a finished layer counted whole", () => {
    const bytes = new PullBytes()
    expect(bytes.add({ status: 'Pulling fs layer', id: 'a' })).toBe(false)
    expect(
      bytes.add({ status: 'Downloading', id: 'a', progressDetail: { current: 10, total: 100 } }),
    ).toBe(true)
    expect(
      bytes.add({ status: 'Downloading', id: 'b', progressDetail: { current: 5, total: 50 } }),
    ).toBe(true)
    expect([bytes.done, bytes.total]).toEqual([15, 150])
    expect(bytes.add({ status: 'Download complete', id: 'a' })).toBe(true)
    expect([bytes.done, bytes.total]).toEqual([105, 150])
    // Extraction reports bytes too; they are not downloads and leave the figures as they are.
    expect(
      bytes.add({ status: 'Extracting', id: 'a', progressDetail: { current: 1, total: 100 } }),
    ).toBe(false)
    expect(bytes.add({ status: 'Pull complete', id: 'b' })).toBe(true)
    expect([bytes.done, bytes.total]).toEqual([150, 150])
    // A layer that was already there reports no size and adds nothing.
    expect(bytes.add({ status: 'Already exists', id: 'c' })).toBe(false)
    expect(bytes.add({ status: 'Pull complete', id: 'c' })).toBe(false)
    expect([bytes.done, bytes.total]).toEqual([150, 150])
  })
})
