import { GraphQLError, parse, type DocumentNode } from 'graphql'

/**
 * Tokens a GraphQL document may have (graphql-js's `maxTokens`). A document of
 * MAX_QUERY_FIELDS fields with arguments has about 15 000; parsing stops at this bound instead
 * of reading a megabyte of tokens.
 */
export const MAX_DOCUMENT_TOKENS = 50_000

export type ParsedDocument =
  { ok: true; document: DocumentNode } | { ok: false; error: GraphQLError }

/**
 * The document, or the syntax error graphql-js reports for it. A document nested so deep that
 * the parser's recursion overflows (a list literal thousands of `[` deep) is a syntax error
 * too, not a fault of the server.
 */
export function parseDocument(source: string): ParsedDocument {
  try {
    return { ok: true, document: parse(source, { maxTokens: MAX_DOCUMENT_TOKENS }) }
  } catch (error) {
    if (error instanceof GraphQLError) return { ok: false, error }
    if (error instanceof RangeError) {
      return {
        ok: false,
        error: new GraphQLError('Syntax Error: the document is nested too deeply to parse.'),
      }
    }
    throw error
  }
}
