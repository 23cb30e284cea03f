import { describe, expect, it } from 'vitest'
import { doneBatchUrl } from './worker-protocol.js'

describe('doneBatchUrl', () => {
  it('is the job-done URL with job-done-batch and without the job id, query kept', () => {
    expect(doneBatchUrl('http://h:1/v2/ep/job-done/w-1/$ID')).toBe(
      'http://h:1/v2/ep/job-done-batch/w-1',
    )
    expect(doneBatchUrl('http://h/v2/ep/job-done/w-1/$ID?gpu=A4000')).toBe(
      'http://h/v2/ep/job-done-batch/w-1?gpu=A4000',
    )
  })

  it('is undefined for a URL of another shape: then each result is its own post', () => {
    expect(doneBatchUrl('http://h/v2/ep/output/$ID')).toBeUndefined()
    expect(doneBatchUrl('http://h/v2/ep/job-done/w-1/$ID/extra')).toBeUndefined()
  })
})
