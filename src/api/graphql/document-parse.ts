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

/** A document that parsed, and the limit errors of query-limits.ts once they were asked for. */
interface CheckedDocument {
  document: DocumentNode
  overLimits?: readonly GraphQLError[]
}

/**
 * Documents that parsed, by their text: a client sends the same few documents again and again,
 * and parsing one and walking it for the limits cost about 6 µs of each pod query's CPU
 * (bench/README.md). Bounded in count and in the length of a text kept; the oldest is dropped
 * first. A document that does not parse is not kept (its answer is an error anyway).
 */
export class ParsedDocuments {
  private readonly kept = new Map<string, CheckedDocument>()

  constructor(
    private readonly limits: (document: DocumentNode) => readonly GraphQLError[],
    private readonly maxCount = 1_000,
    private readonly maxLength = 16_384,
  ) {}

  /** parseDocument(source), from what is kept when the text was parsed before. */
  parse(source: string): ParsedDocument {
    const kept = this.kept.get(source)
    if (kept) return { ok: true, document: kept.document }
    const parsed = parseDocument(source)
    if (parsed.ok && source.length <= this.maxLength) {
      if (this.kept.size >= this.maxCount) this.kept.delete(this.kept.keys().next().value!)
      this.kept.set(source, { document: parsed.document })
    }
    return parsed
  }

  /** The limit errors of a document `parse` returned, walked once per text kept. */
  overLimits(source: string, document: DocumentNode): readonly GraphQLError[] {
    const kept = this.kept.get(source)
    if (kept?.document !== document) return this.limits(document)
    kept.overLimits ??= this.limits(document)
    return kept.overLimits
  }
}
