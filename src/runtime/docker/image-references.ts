/** Image references and pulls as the Docker engine's API has them. */

/**
 * The registry an image reference is pulled from, as Docker's auth config names it: the first
 * path component when it looks like a host (has a dot or a port, or is localhost), else
 * Docker Hub.
 */
export function registryOf(image: string): string {
  const slash = image.indexOf('/')
  if (slash > 0) {
    const first = image.slice(0, slash)
    if (first.includes('.') || first.includes(':') || first === 'localhost') return first
  }
  return 'https://index.docker.io/v1/'
}

/**
 * The X-Registry-Auth header of a pull: base64url of the JSON auth config, padded: the engine
 * decodes it with Go's padded URL encoding, and an unpadded value (JSON whose length is not a
 * multiple of 3) silently reads as no credentials at all.
 */
export function registryAuthHeader(
  image: string,
  auth: { username: string; password: string },
): string {
  const config = {
    username: auth.username,
    password: auth.password,
    serveraddress: registryOf(image),
  }
  return Buffer.from(JSON.stringify(config))
    .toString('base64')
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
}

/** `name` -> `name:latest`; a digest or tag is kept. What POST /images/create wants. */
export function withDefaultTag(image: string): string {
  if (image.includes('@')) return image
  const lastSlash = image.lastIndexOf('/')
  return image.slice(lastSlash + 1).includes(':') ? image : `${image}:latest`
}

/** One object of the JSON stream of POST /images/create. */
export interface PullProgressEvent {
  status?: string
  id?: string
  progress?: string
  /** Downloading: bytes of the layer so far and in all. */
  progressDetail?: { current?: number; total?: number }
  error?: string
}

/** Per-byte progress: thousands of events per layer, left out of the pod's log. */
const NOISY_PULL_STATUSES = new Set(['Downloading', 'Extracting', 'Waiting', 'Verifying Checksum'])

/** A pull event as a log line (`<layer>: Pull complete`); undefined for byte-level progress. */
export function pullProgressLine(event: PullProgressEvent): string | undefined {
  if (!event.status || NOISY_PULL_STATUSES.has(event.status)) return undefined
  return event.id ? `${event.id}: ${event.status}` : event.status
}

/**
 * Why a pull failed, for the pod's ERROR reason: the engine's message, led by what it means
 * (no such image, credentials refused). The password is masked should the engine echo it.
 */
export function pullFailureMessage(
  image: string,
  error: unknown,
  auth?: { username: string; password: string },
): string {
  let detail = ((error as Error | null)?.message ?? String(error)).trim()
  // dockerode prefixes "(HTTP code 404) unexpected - "; the engine's own words follow.
  detail = detail.replace(/^\(HTTP code \d+\)\s*[a-z ]*-\s*/i, '')
  if (auth?.password) detail = detail.split(auth.password).join('***')
  let meaning: string
  if (
    /unauthorized|authentication required|no basic auth|incorrect username or password/i.test(
      detail,
    )
  ) {
    meaning = auth
      ? "the registry refused the pod's registry credentials"
      : "the registry wants credentials (set the pod's container registry auth)"
  } else if (/manifest unknown|not found|does not exist|repository name not known/i.test(detail)) {
    meaning = 'no such image in its registry'
  } else {
    meaning = 'the pull failed'
  }
  return `could not pull image ${image}: ${meaning} (${detail})`
}
