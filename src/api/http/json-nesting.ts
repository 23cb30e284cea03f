import { AppError } from '../../shared/app-error.js'
import { jsonDeeperThan, MAX_JSON_DEPTH } from '../../shared/json-depth.js'

/** The 400 for JSON nested past MAX_JSON_DEPTH; `where` names the part (`body`, `variables`). */
export function tooDeepError(where = 'body'): AppError {
  const problem = `${where}: arrays and objects are nested deeper than ${MAX_JSON_DEPTH} levels; the limit is ${MAX_JSON_DEPTH}`
  return new AppError('MALFORMED_REQUEST', `the request is not valid: ${problem}`, {
    errors: [problem],
  })
}

/** Throws `tooDeepError` when the JSON text nests deeper than MAX_JSON_DEPTH. */
export function refuseDeepJson(text: string, where = 'body'): void {
  if (jsonDeeperThan(text)) throw tooDeepError(where)
}
