import { GraphQLError, parse, type DocumentNode } from 'graphql'
import { documentBudgetError, MAX_DOCUMENT_TOKENS } from './document-budget.js'

export type ParsedDocument =
  | { ok: true; document: DocumentNode }
  /** `overBudget`: refused by document-budget.ts before any parse, whoever asks. */
  | { ok: false; error: GraphQLError; overBudget: boolean }

/**
 * The document, or why it is not one: over the budget of document-budget.ts (checked first,
 * on its tokens), or the syntax error graphql-js reports for it. A document nested so deep that
 * the parser's recursion overflows is a syntax error too, not a fault of the server (the budget's
 * nesting bound keeps the parser far from that; this stays in case the stack is small).
 */
export function parseDocument(source: string): ParsedDocument {
  const overBudget = documentBudgetError(source)
  if (overBudget) return { ok: false, error: overBudget, overBudget: true }
  try {
    return { ok: true, document: parse(source, { maxTokens: MAX_DOCUMENT_TOKENS }) }
  } catch (error) {
    if (error instanceof GraphQLError) return { ok: false, error, overBudget: false }
    if (error instanceof RangeError) {
      return {
        ok: false,
        error: new GraphQLError('Syntax Error: the document is nested too deeply to parse.'),
        overBudget: false,
      }
    }
    throw error
  }
}
