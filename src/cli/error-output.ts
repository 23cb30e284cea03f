import { ApiError } from '../client/api-client.js'

/** How a failed command is reported with `--json` (docs/cli.md, "Scripting"). */
export interface ErrorJson {
  error: {
    /** What the command would print without --json. */
    message: string
    exitCode: number
    /** From the server's problem+json, when the server refused the request. */
    status?: number
    title?: string
    detail?: string
    errors?: string[]
  }
}

/** One line of JSON for stderr: the message, the exit code and the server's problem, if any. */
export function errorJson(error: unknown, message: string, exitCode: number): string {
  const body: ErrorJson = { error: { message, exitCode } }
  if (error instanceof ApiError) {
    body.error.status = error.status
    const { title, detail, errors } = error.problem ?? {}
    if (title !== undefined) body.error.title = title
    if (detail !== undefined) body.error.detail = detail
    if (errors !== undefined) body.error.errors = errors
  }
  return JSON.stringify(body)
}

/**
 * What a CLI user does about a 401. The server's detail speaks of HTTP headers (the spec's
 * wording for every client); a CLI user sets a flag, a variable or a profile instead.
 */
export function unauthorizedHint(apiKeyFrom: string | undefined): string {
  if (apiKeyFrom === undefined) {
    return 'the CLI found no API key: pass --api-key <key>, set PODYARD_API_KEY, or save one with `podyard config set --api-key-stdin` (the admin key is printed when the server first starts; `podyard keys create` makes more)'
  }
  return `the key came from ${apiKeyFrom}: use a key the server created (pyd_...), e.g. from \`podyard keys create\` or the console`
}
