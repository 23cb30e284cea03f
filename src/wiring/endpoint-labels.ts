/** The `endpoint` label's value for the endpoints past the cap. */
export const OTHER_ENDPOINTS = 'other'

/**
 * The `endpoint` label of the job and queue metrics, bounded: the first `limit` endpoints this
 * process sees active (a job submitted, taken or ended, or a job in the queue when `/metrics` is
 * read) keep their id for the life of the process, every later one is `other`. So a series set
 * never grows past `limit + 1` per metric, however many endpoints tenants create, while the busy
 * endpoints of a small installation each get a series of their own (docs/production.md).
 */
export class EndpointLabels {
  private readonly named = new Set<string>()

  constructor(readonly limit: number) {}

  of(endpointId: string): string {
    if (this.named.has(endpointId)) return endpointId
    if (this.named.size >= this.limit) return OTHER_ENDPOINTS
    this.named.add(endpointId)
    return endpointId
  }
}
