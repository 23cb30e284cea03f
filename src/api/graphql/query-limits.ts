import {
  GraphQLError,
  Kind,
  type DefinitionNode,
  type DocumentNode,
  type FragmentDefinitionNode,
  type SelectionSetNode,
} from 'graphql'

/** Deepest nesting of data fields a document may ask for; the deepest a real client sends is 5. */
export const MAX_QUERY_DEPTH = 12
/**
 * Fields an operation, or a fragment, may select, counted after expanding fragments and
 * aliases: its cost. Introspection fields count like any other: 2 000 aliases of `__schema`
 * answered 80 MB and held the event loop for seconds. runpod-python's and
 * runpodctl's largest documents select about 60 fields, graphql-js's full introspection query
 * 229. It was 1 000 before: graphql-js's validation compares fields of the same name
 * pairwise (OverlappingFieldsCanBeMerged), so its cost grows with the square of this bound, and
 * 330 copies of `__type(name: "Pod") { ofType { name } }` took 100 ms to validate, without a
 * key; at 500 the worst such document takes a quarter of that.
 */
export const MAX_QUERY_FIELDS = 500
/**
 * Fields of a whole document: its operations' and its fragments' counted as above, added up.
 * graphql-js validates each operation and fragment apart, so six roots of 500 fields each cost
 * six times one. graphql-js's full introspection query has 469 (229 in the operation, 240 in
 * its three fragments).
 */
export const MAX_DOCUMENT_FIELDS = 1000
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
 * What is wrong with `document` by the limits above, one error per limit an operation or a
 * fragment goes over (HTTP 400, code VALIDATION_FAILED), with a message saying which limit and
 * by how much. It needs no schema and reads each fragment once, so its cost is linear in the
 * document: the GraphQL route checks it before graphql-js's own validation, whose
 * OverlappingFieldsCanBeMerged rule is quadratic in the fields of an operation or fragment,
 * so that only documents within the limits reach it.
 */
export function queryLimitErrors(document: DocumentNode): GraphQLError[] {
  const fragments = new Map<string, FragmentDefinitionNode>()
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) {
      fragments.set(definition.name.value, definition)
    }
  }
  const memo = new Map<string, Measure>()
  const errors: GraphQLError[] = []
  /** Said only when no operation is over a limit: a fragment over one makes its users so. */
  const fragmentErrors: GraphQLError[] = []
  const error = (node: DefinitionNode, message: string) =>
    new GraphQLError(message, { nodes: [node], extensions: { code: 'VALIDATION_FAILED' } })
  const report = (node: DefinitionNode, message: string) => errors.push(error(node, message))
  let total = 0
  for (const node of document.definitions) {
    if (node.kind === Kind.FRAGMENT_DEFINITION) {
      // A fragment is held to the field limit on its own, used or not: graphql-js compares the
      // fields of every fragment pairwise too, and an unused fragment of 980 same-named fields
      // made a document of one field that took 300 ms to validate. Its depth counts
      // where it is spread.
      const name = node.name.value
      const introspective = node.typeCondition.name.value.startsWith('__')
      const key = `${name}:${introspective}`
      let m = memo.get(key)
      if (!m) {
        m = measure(node.selectionSet, fragments, memo, new Set([name]), introspective)
        memo.set(key, m)
      }
      total += m.fields
      if (m.fields > MAX_QUERY_FIELDS) {
        fragmentErrors.push(
          error(
            node,
            `fragment ${name} selects ${m.fields} fields (fragments and aliases expanded); the limit is ${MAX_QUERY_FIELDS}: split it into smaller documents`,
          ),
        )
      }
      continue
    }
    if (node.kind !== Kind.OPERATION_DEFINITION) continue
    const m = measure(node.selectionSet, fragments, memo, new Set(), false)
    total += m.fields
    const name = node.name ? `${node.operation} ${node.name.value}` : `this ${node.operation}`
    if (m.data > MAX_QUERY_DEPTH) {
      report(
        node,
        `${name} is nested ${m.data} levels deep; the limit is ${MAX_QUERY_DEPTH}: select fewer nested fields`,
      )
    }
    if (m.fields > MAX_QUERY_FIELDS) {
      report(
        node,
        `${name} selects ${m.fields} fields (fragments and aliases expanded); the limit is ${MAX_QUERY_FIELDS}: split it into smaller documents`,
      )
    }
    if (m.introspection > MAX_INTROSPECTION_DEPTH) {
      report(
        node,
        `${name} nests introspection ${m.introspection} levels deep; the limit is ${MAX_INTROSPECTION_DEPTH}`,
      )
    }
  }
  if (errors.length === 0) errors.push(...fragmentErrors)
  const [first] = document.definitions
  if (errors.length === 0 && total > MAX_DOCUMENT_FIELDS && first) {
    report(
      first,
      `this document selects ${total} fields in all its operations and fragments (each with its fragments expanded); the limit is ${MAX_DOCUMENT_FIELDS}: split it into smaller documents`,
    )
  }
  return errors
}
