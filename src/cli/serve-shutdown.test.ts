import { describe, expect, it } from 'vitest'
import { leftRunningMessage } from './serve-shutdown.js'

describe('leftRunningMessage', () => {
  it('says nothing when nothing is left', () => {
    expect(leftRunningMessage({ pods: [], workers: [] })).toBeUndefined()
  })
  it('names the pods and the endpoints of the workers, and how to stop them', () => {
    const message = leftRunningMessage({
      pods: ['p1', 'p2'],
      workers: [
        { id: 'w1', endpointId: 'e1' },
        { id: 'w2', endpointId: 'e1' },
      ],
    })!
    expect(message).toContain('2 pods: p1, p2')
    expect(message).toContain('2 serverless workers of 1 endpoint: e1')
    expect(message).toContain('podyard pods stop <pod-id>')
    expect(message).toContain(
      'podyard endpoints update <endpoint-id> --workers-min 0 --workers-max 0',
    )
  })
})
