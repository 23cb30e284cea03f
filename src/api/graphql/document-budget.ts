import { GraphQLError, Lexer, Source, TokenKind, type Token } from 'graphql'
import type { ErrorCode } from '../../shared/error-codes.js'

/*
 * What one GraphQL document may hold, counted on its tokens before it is parsed, key or no key
 * (docs/graphql.md, "Limits"). All the server does with a document afterwards (the
 * parse, the public-document decision, the field and depth limits, graphql-js's validation) is
 * bounded by these numbers whatever the document's shape; a bound on bytes alone is not enough,
 * since 1.6 KB of fragments spread twice each expand to 2^40 fields, and graphql-js's
 * validation is quadratic in places (OverlappingFieldsCanBeMerged compares same-named fields
 * pairwise).
 *
 * Real clients' documents are far below every bound: graphql-js's full introspection query
 * (every option on) has 184 tokens, 3 fragments, 8 spreads, nesting 10 and no directive;
 * runpod-python's, runpodctl's and dstack's documents a few hundred tokens, no fragment and
 * nesting 6 at most (a pod deployment with its env inlined). document-budget.test.ts checks.
 */

/**
 * Tokens (names, punctuation, values; comments are not tokens) a document may have. A document
 * at the field limits (MAX_DOCUMENT_FIELDS in all, query-limits.ts) without arguments has about
 * 3 000; graphql-js's validation of the worst document of 10 000 takes tens of milliseconds.
 */
export const MAX_DOCUMENT_TOKENS = 10_000
/**
 * Brackets (`{`, `[`, `(`) open at once: the parser recurses once per level. Selections are
 * nested 12 deep at most (MAX_QUERY_DEPTH), introspection 20; values of our input types 4.
 */
export const MAX_DOCUMENT_NESTING = 32
/** Operations (`query ...`, `mutation ...`, `{ ... }`) one document may define. */
export const MAX_DOCUMENT_OPERATIONS = 100
/** Fragments (`fragment F on T { ... }`) one document may define. */
export const MAX_FRAGMENT_DEFINITIONS = 100
/** Fragment spreads (`...F`; inline fragments `... on T` are not spreads) in one document. */
export const MAX_FRAGMENT_SPREADS = 500
/** Directives (`@include(if: ...)`, `@skip(if: ...)`) one document may use. */
export const MAX_DOCUMENT_DIRECTIVES = 100

const OPENING: ReadonlySet<string> = new Set([
  TokenKind.BRACE_L,
  TokenKind.BRACKET_L,
  TokenKind.PAREN_L,
])
const CLOSING: ReadonlySet<string> = new Set([
  TokenKind.BRACE_R,
  TokenKind.BRACKET_R,
  TokenKind.PAREN_R,
])

/**
 * Why `source` is over the budget, as the GraphQL error to answer (HTTP 400, code
 * DOCUMENT_TOO_LARGE, located at the token that went over), or undefined when it is within it.
 * One pass over the tokens that stops at the first bound crossed, so its cost is bounded by
 * MAX_DOCUMENT_TOKENS whatever the document: nothing is parsed or walked before it. A document
 * that does not lex is within the budget here; the parser then reports its syntax error,
 * reading no further than this pass did.
 */
export function documentBudgetError(text: string): GraphQLError | undefined {
  const source = new Source(text)
  const refuse = (token: Token, message: string) =>
    new GraphQLError(message, {
      source,
      positions: [token.start],
      extensions: { code: 'DOCUMENT_TOO_LARGE' satisfies ErrorCode },
    })
  const lexer = new Lexer(source)
  let tokens = 0
  let nesting = 0
  /** Definitions: each one's body is a `{` at the top level. */
  let definitions = 0
  let fragments = 0
  let spreads = 0
  let directives = 0
  let previous: string = TokenKind.SOF
  try {
    for (let token = lexer.advance(); token.kind !== TokenKind.EOF; token = lexer.advance()) {
      if (++tokens > MAX_DOCUMENT_TOKENS) {
        return refuse(
          token,
          `this document has more than ${MAX_DOCUMENT_TOKENS} tokens; the limit is ${MAX_DOCUMENT_TOKENS}: split it into smaller documents`,
        )
      }
      if (OPENING.has(token.kind)) {
        if (nesting === 0 && token.kind === TokenKind.BRACE_L) definitions++
        if (++nesting > MAX_DOCUMENT_NESTING) {
          return refuse(
            token,
            `this document nests {, [ and ( more than ${MAX_DOCUMENT_NESTING} levels deep; the limit is ${MAX_DOCUMENT_NESTING}`,
          )
        }
        // A fragment's keyword came first, so what is left of the definitions are operations.
        if (definitions - fragments > MAX_DOCUMENT_OPERATIONS) {
          return refuse(
            token,
            `this document defines more than ${MAX_DOCUMENT_OPERATIONS} operations; the limit is ${MAX_DOCUMENT_OPERATIONS}: send them in separate requests`,
          )
        }
      } else if (CLOSING.has(token.kind)) {
        // An unbalanced bracket is the parser's syntax error to report.
        nesting = Math.max(0, nesting - 1)
      } else if (token.kind === TokenKind.AT) {
        if (++directives > MAX_DOCUMENT_DIRECTIVES) {
          return refuse(
            token,
            `this document has more than ${MAX_DOCUMENT_DIRECTIVES} directives; the limit is ${MAX_DOCUMENT_DIRECTIVES}`,
          )
        }
      } else if (token.kind === TokenKind.NAME) {
        // `...Name` spreads a fragment; `... on Type` is an inline fragment.
        if (previous === TokenKind.SPREAD && token.value !== 'on') {
          if (++spreads > MAX_FRAGMENT_SPREADS) {
            return refuse(
              token,
              `this document spreads fragments (...Name) more than ${MAX_FRAGMENT_SPREADS} times; the limit is ${MAX_FRAGMENT_SPREADS}`,
            )
          }
        } else if (
          token.value === 'fragment' &&
          nesting === 0 &&
          (previous === TokenKind.SOF || previous === TokenKind.BRACE_R)
        ) {
          // The first word of a definition: at the start, or after the previous one's `}`.
          if (++fragments > MAX_FRAGMENT_DEFINITIONS) {
            return refuse(
              token,
              `this document defines more than ${MAX_FRAGMENT_DEFINITIONS} fragments; the limit is ${MAX_FRAGMENT_DEFINITIONS}`,
            )
          }
        }
      }
      previous = token.kind
    }
  } catch (error) {
    if (error instanceof GraphQLError) return undefined
    throw error
  }
  return undefined
}
