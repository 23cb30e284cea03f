import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse as parseYaml } from 'yaml'
import { ConfigError } from '../config/load-config.js'
import type { Config } from '../config/schema.js'
import { buildModelRegistry, ModelConfigError } from '../domain/models/model-registry.js'
import { ModelService } from '../domain/models/model-service.js'
import type { ObjectStore } from '../domain/models/ports.js'
import { deriveObjectUrlSecret, ObjectUrlSigner } from '../domain/models/signed-urls.js'
import { LocalObjectStore } from '../store/local-object-store.js'
import { KyselyModelJobRepo } from '../store/model-job-repo.js'
import { S3ObjectStore } from '../store/s3-object-store.js'
import type { ModelParts, PlatformContext } from './platform-context.js'

/** podyard's build (`dist/`), which the public models' workers run (docs/public-endpoints.md). */
export const MODEL_CODE_DIR = fileURLToPath(new URL('../../dist', import.meta.url))

/**
 * Public model endpoints (docs/public-endpoints.md): the model registry, where results are kept,
 * and the service that runs model jobs on the platform's own endpoints (created or updated now).
 */
export async function wireModels(context: PlatformContext): Promise<ModelParts> {
  const { config, store, clock, logger, parts } = context
  const signer = new ObjectUrlSigner(deriveObjectUrlSecret(parts.accounts.encryptionKey))
  const service = new ModelService({
    models: loadModels(config),
    ownerAccountId: parts.accounts.modelsAccount.id,
    endpoints: parts.serverless.endpoints,
    jobs: parts.serverless.jobs,
    credits: parts.billing.credits,
    repo: new KyselyModelJobRepo(store.db),
    objects: objectStoreFor(config),
    signer,
    baseUrl: context.serverUrl,
    clock,
    // Each charged job is usage of the model for `/v2/billing/endpoints`.
    usage: parts.billing.usage,
    warn: (message, fields) => logger.warn(fields, message),
  })
  if (!existsSync(path.join(MODEL_CODE_DIR, 'models', 'reference-worker.js'))) {
    logger.warn(
      { dir: MODEL_CODE_DIR },
      "the public models' worker program is not built (npm run build): their jobs will not run",
    )
  }
  await service.syncEndpoints()
  return { service, signer }
}

/**
 * Where public model results are kept (docs/public-endpoints.md, "Storage"): the data directory,
 * or an S3-compatible bucket. A missing S3 setting refuses to start (exit 2) rather than losing
 * images later; no message here ever carries the secret key.
 */
export function objectStoreFor(config: Readonly<Config>): ObjectStore {
  const { kind, endpoint, region, bucket, accessKeyId, secretAccessKey, prefix, forcePathStyle } =
    config.objects
  if (kind === 'local') return new LocalObjectStore(path.join(config.dataDir, 'objects'))
  if (!endpoint || !bucket || !accessKeyId || !secretAccessKey) {
    const missing = Object.entries({ endpoint, bucket, accessKeyId, secretAccessKey })
      .filter(([, value]) => !value)
      .map(([field]) => `objects.${field}`)
    throw new ConfigError(`objects.kind is s3, which needs ${missing.join(', ')}`)
  }
  try {
    return new S3ObjectStore({
      endpoint,
      region,
      bucket,
      credentials: { accessKeyId, secretAccessKey },
      prefix,
      forcePathStyle,
    })
  } catch (error) {
    throw new ConfigError(`objects: ${(error as Error).message}`)
  }
}

/** The model registry: the defaults, then `models.file`, then `models.definitions`. */
function loadModels(config: Readonly<Config>) {
  const sources: Array<{ origin: string; entries: unknown }> = []
  if (config.models.file) {
    let text: string
    try {
      text = readFileSync(config.models.file, 'utf8')
    } catch (error) {
      throw new ModelConfigError(
        `models.file: cannot read ${config.models.file}: ${(error as Error).message}`,
      )
    }
    sources.push({ origin: config.models.file, entries: parseYaml(text) as unknown })
  }
  sources.push({ origin: 'models.definitions', entries: config.models.definitions })
  return buildModelRegistry(sources)
}
