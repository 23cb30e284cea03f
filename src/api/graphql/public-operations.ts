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
  // RunPod serves these to anyone too: its public endpoints and its hub (empty here).
  'allAiApiPublicConfigs',
  'listings',
])

/** Introspection and `__typename` say nothing about any account either. */
const isMetaField = (name: string) => name.startsWith('__')

function onlyPublicFields(
  set: SelectionSetNode,
  fragments: Map<string, FragmentDefinitionNode>,
  seen: Set<string>,
): boolean {
  return set.selections.every((selection) => {
    switch (selection.kind) {
      case Kind.FIELD:
        return PUBLIC_ROOT_FIELDS.has(selection.name.value) || isMetaField(selection.name.value)
      case Kind.INLINE_FRAGMENT:
        return onlyPublicFields(selection.selectionSet, fragments, seen)
      case Kind.FRAGMENT_SPREAD: {
        const name = selection.name.value
        const fragment = fragments.get(name)
        // An unknown or cyclic fragment is an invalid document: not public, so it gets 401.
        if (!fragment || seen.has(name)) return false
        seen.add(name)
        const ok = onlyPublicFields(fragment.selectionSet, fragments, seen)
        seen.delete(name)
        return ok
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
  return onlyPublicFields(operation.selectionSet, fragments, new Set())
}
