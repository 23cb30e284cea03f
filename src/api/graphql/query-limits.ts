import {
  GraphQLError,
  Kind,
  type ASTVisitor,
  type FragmentDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
} from 'graphql'

/** Deepest nesting of data fields a document may ask for; the deepest a real client sends is 5. */
export const MAX_QUERY_DEPTH = 12
/**
 * Fields a document may select, counted after expanding fragments and aliases: its cost.
 * Introspection fields count like any other: 2 000 aliases of `__schema` answered 80 MB and
 * held the event loop for seconds (issue 16). runpod-python's and runpodctl's largest
 * documents select about 60 fields, graphql-js's full introspection query 229.
 */
export const MAX_QUERY_FIELDS = 1000
/**
 * The depth of introspection is bounded apart: GraphiQL's standard introspection query nests
 * `ofType` about 14 levels deep.
 */
export const MAX_INTROSPECTION_DEPTH = 20

interface Measure {
  /** Depth of data fields. */
  data: number
  /** Depth counting every field, introspection included. */
  introspection: number
  /** Fields selected, introspection included, fragments expanded. */
  fields: number
}

const ZERO: Measure = { data: 0, introspection: 0, fields: 0 }

function measure(
  set: SelectionSetNode,
  fragments: Map<string, FragmentDefinitionNode>,
  memo: Map<string, Measure>,
  visiting: Set<string>,
  inIntrospection: boolean,
): Measure {
  const out: Measure = { ...ZERO }
  const add = (m: Measure) => {
    out.data = Math.max(out.data, m.data)
    out.introspection = Math.max(out.introspection, m.introspection)
    out.fields += m.fields
  }
  for (const selection of set.selections) {
    if (selection.kind === Kind.FIELD) {
      const introspective = inIntrospection || selection.name.value.startsWith('__')
      const below = selection.selectionSet
        ? measure(selection.selectionSet, fragments, memo, visiting, introspective)
        : ZERO
      add({
        data: introspective ? 0 : below.data + 1,
        introspection: below.introspection + 1,
        fields: below.fields + 1,
      })
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      add(measure(selection.selectionSet, fragments, memo, visiting, inIntrospection))
    } else {
      const name = selection.name.value
      const fragment = fragments.get(name)
      // Unknown and cyclic fragments are reported by graphql's own rules.
      if (!fragment || visiting.has(name)) continue
      const key = `${name}:${inIntrospection}`
      let measured = memo.get(key)
      if (!measured) {
        visiting.add(name)
        measured = measure(fragment.selectionSet, fragments, memo, visiting, inIntrospection)
        visiting.delete(name)
        memo.set(key, measured)
      }
      add(measured)
    }
  }
  return out
}

/**
 * A validation rule: a document nested deeper, or selecting more fields, than the limits fails
 * before it runs, with a message saying which limit and by how much.
 */
export function queryLimitsRule(context: ValidationContext): ASTVisitor {
  const fragments = new Map<string, FragmentDefinitionNode>()
  for (const definition of context.getDocument().definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) {
      fragments.set(definition.name.value, definition)
    }
  }
  const memo = new Map<string, Measure>()
  return {
    OperationDefinition(node) {
      const m = measure(node.selectionSet, fragments, memo, new Set(), false)
      const name = node.name ? `${node.operation} ${node.name.value}` : `this ${node.operation}`
      const report = (message: string) =>
        context.reportError(
          new GraphQLError(message, { nodes: [node], extensions: { code: 'VALIDATION_FAILED' } }),
        )
      if (m.data > MAX_QUERY_DEPTH) {
        report(
          `${name} is nested ${m.data} levels deep; the limit is ${MAX_QUERY_DEPTH}: select fewer nested fields`,
        )
      }
      if (m.fields > MAX_QUERY_FIELDS) {
        report(
          `${name} selects ${m.fields} fields (fragments and aliases expanded); the limit is ${MAX_QUERY_FIELDS}: split it into smaller documents`,
        )
      }
      if (m.introspection > MAX_INTROSPECTION_DEPTH) {
        report(
          `${name} nests introspection ${m.introspection} levels deep; the limit is ${MAX_INTROSPECTION_DEPTH}`,
        )
      }
    },
  }
}
