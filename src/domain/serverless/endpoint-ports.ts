import type { Endpoint } from './endpoint.js'

export interface EndpointRepo {
  insert(endpoint: Endpoint): Promise<void>
  findById(id: string): Promise<Endpoint | undefined>
  /** The account's endpoints, oldest first. */
  listByAccount(accountId: string): Promise<Endpoint[]>
  /** Every endpoint of every account, oldest first (the autoscaler runs them all). */
  listAll(): Promise<Endpoint[]>
  /** Endpoints of every account whose container block came from the template. */
  listByTemplate(templateId: string): Promise<Endpoint[]>
  update(endpoint: Endpoint): Promise<void>
  delete(id: string): Promise<void>
}
