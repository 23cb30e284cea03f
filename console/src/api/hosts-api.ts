import type { RawApi } from './raw-api'
import { ApiError } from './problem'

/**
 * The fleet's hosts, for the admin (issue 17 adds `/v2/admin/hosts`). Until a server has the
 * route it answers 404, and the console leaves the page out. The fields shown are the ones a
 * host has in DESIGN.md; whatever else the route sends is not read.
 */
export interface HostView {
  id: string
  name?: string
  state?: string
  dataCenterId?: string
  driver?: string
  gpus?: Array<{ type?: string; count?: number }> | number
}

export async function listHosts(raw: RawApi): Promise<HostView[] | undefined> {
  try {
    const answer = await raw.json<{ hosts?: HostView[] } | HostView[]>('/v2/admin/hosts')
    return Array.isArray(answer) ? answer : (answer.hosts ?? [])
  } catch (error) {
    if (error instanceof ApiError && (error.status === 404 || error.status === 501))
      return undefined
    throw error
  }
}
