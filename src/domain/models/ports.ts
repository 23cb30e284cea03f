/** One public model job: who called, what it may cost, and what it was charged. */
export interface ModelJobRecord {
  jobId: string
  modelId: string
  /** The platform-owned endpoint that ran it. */
  endpointId: string
  /** The caller's account: the only one that may read or cancel the job, and the one charged. */
  accountId: string
  /** The most the job may cost (checked against the balance before it ran), nano-USD. */
  maxPriceNano: number
  /** What the caller was charged, nano-USD; null until the job is settled. */
  costNano: number | null
  /** The stored result (an image), if any. */
  objectKey: string | null
  createdAt: string
  /** When the finished job was settled (charged, its image stored); null before. */
  settledAt: string | null
  /** When the result's URL stops working; null without a stored result. */
  objectExpiresAt: string | null
}

export interface ModelJobRepo {
  insert(record: ModelJobRecord): Promise<void>
  find(jobId: string): Promise<ModelJobRecord | undefined>
  /**
   * Marks the job settled with its cost and stored object, only if nobody did before: true for
   * the one caller that did (and so charges), false for everyone else.
   */
  claimSettlement(
    jobId: string,
    settlement: {
      costNano: number
      objectKey: string | null
      objectExpiresAt: string | null
      settledAt: string
    },
  ): Promise<boolean>
  /** Settled records whose object expired before `before`, for the object sweep. */
  listExpiredObjects(before: string, limit: number): Promise<ModelJobRecord[]>
  clearObject(jobId: string): Promise<void>
}

/**
 * Where the platform keeps generated results (docs/public-endpoints.md, "Storage"): a local
 * directory by default (store/local-object-store.ts), or an S3-compatible bucket
 * (store/s3-object-store.ts).
 */
export interface ObjectStore {
  put(key: string, body: Buffer, contentType: string): Promise<void>
  /** The object, or undefined when there is none. */
  get(key: string): Promise<{ body: Buffer; contentType: string } | undefined>
  delete(key: string): Promise<void>
}
