import {
  Kind,
  OperationTypeNode,
  type DocumentNode,
  type FragmentDefinitionNode,
  type SelectionSetNode,
} from 'graphql'
import { parseDocument } from './document-parse.js'

/**
 * Root fields anyone may query without an API key: RunPod's docs scripts list GPU and CPU
 * types with no key at all (wire-compat §6.1), and the catalog holds no account's data.
 */
export const PUBLIC_ROOT_FIELDS: ReadonlySet<string> = new Set([
  'gpuTypes',
  'cpuTypes',
  // gpuhunt (dstack's offer catalog) asks these with no key, as RunPod answers them.
  'dataCenters',
  'countryCodes',
  'cpuFlavors',
  // RunPod serves these to anyone too: its public endpoints and its hub (empty here).
  'allAiApiPublicConfigs',
  'listings',
])

/** Introspection and `__typename` say nothing about any account either. */
const isMetaField = (name: string) => name.startsWith('__')

/** A fragment's verdict: public or not, or VISITING while its own selections are looked at. */
const VISITING = 'visiting'
type Verdict = boolean | typeof VISITING

/**
 * Whether every root field `set` selects, through inline fragments and fragment spreads, is
 * public. Each fragment is looked at once and its verdict remembered: a fragment spread twice
 * in each of n fragments (`F0 { ...F1 ...F1 } F1 { ...F2 ...F2 } ...`) was walked once per path,
 * 2^n times, before any key was asked for; n = 25 (1 KB) held the event loop 12 s, n = 40 for
 * minutes. The walk is now linear in the document.
 */
function onlyPublicFields(
  set: SelectionSetNode,
  fragments: Map<string, FragmentDefinitionNode>,
  verdicts: Map<string, Verdict>,
): boolean {
  return set.selections.every((selection) => {
    switch (selection.kind) {
      case Kind.FIELD:
        return PUBLIC_ROOT_FIELDS.has(selection.name.value) || isMetaField(selection.name.value)
      case Kind.INLINE_FRAGMENT:
        return onlyPublicFields(selection.selectionSet, fragments, verdicts)
      case Kind.FRAGMENT_SPREAD: {
        const name = selection.name.value
        const known = verdicts.get(name)
        // A fragment being looked at is spread inside itself: a cycle, an invalid document, so
        // not public (it gets 401). A verdict of `false` ends the walk, so no fragment is left
        // VISITING by a walk that goes on.
        if (known !== undefined) return known === true
        const fragment = fragments.get(name)
        if (!fragment) return false
        verdicts.set(name, VISITING)
        const verdict = onlyPublicFields(fragment.selectionSet, fragments, verdicts)
        verdicts.set(name, verdict)
        return verdict
      }
    }
  })
}

/**
 * Whether a request may run without a key: a query (never a mutation or subscription) whose
 * every root field, fragments expanded, is a public one or introspection. The operation is
 * picked as graphql-js picks it (by `operationName`, or the only one); anything ambiguous,
 * unparsable or not a string is not public, and so answers 401 like any request without a key.
 */
export function isPublicRequest(query: unknown, operationName: unknown): boolean {
  if (typeof query !== 'string') return false
  const parsed = parseDocument(query)
  return parsed.ok && isPublicDocument(parsed.document, operationName)
}

/** `isPublicRequest` of a document already parsed. */
export function isPublicDocument(document: DocumentNode, operationName: unknown): boolean {
  const fragments = new Map<string, FragmentDefinitionNode>()
  const operations = []
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) {
      fragments.set(definition.name.value, definition)
    } else if (definition.kind === Kind.OPERATION_DEFINITION) {
      operations.push(definition)
    }
  }
  const operation =
    typeof operationName === 'string' && operationName !== ''
      ? operations.find((o) => o.name?.value === operationName)
      : operations.length === 1
        ? operations[0]
        : undefined
  if (!operation || operation.operation !== OperationTypeNode.QUERY) return false
  return onlyPublicFields(operation.selectionSet, fragments, new Map())
}
