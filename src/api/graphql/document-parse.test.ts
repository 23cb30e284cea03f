import { GraphQLError, type DocumentNode } from 'graphql'
import { describe, expect, it } from 'vitest'
import { ParsedDocuments } from './document-parse.js'

const POD = 'query pod($id: String!) { pod(input: { podId: $id }) { id name } }'

describe('ParsedDocuments', () => {
  it('parses a text once and walks its limits once, however often it is sent', () => {
    let walks = 0
    const tooDeep = new GraphQLError('too deep')
    const documents = new ParsedDocuments(() => {
      walks += 1
      return [tooDeep]
    })
    const first = documents.parse(POD)
    const again = documents.parse(POD)
    expect(first.ok && again.ok && first.document === again.document).toBe(true)
    const document = (first as { document: DocumentNode }).document
    expect(documents.overLimits(POD, document)).toEqual([tooDeep])
    expect(documents.overLimits(POD, document)).toEqual([tooDeep])
    expect(walks).toBe(1)
  })

  it('keeps neither a document that does not parse nor one over the kept length', () => {
    let walks = 0
    const documents = new ParsedDocuments(
      () => {
        walks += 1
        return []
      },
      10,
      40,
    )
    const broken = documents.parse('query { pod(')
    expect(broken.ok).toBe(false)
    expect(documents.parse('query { pod(').ok).toBe(false)
    const long = documents.parse(POD)
    const longAgain = documents.parse(POD)
    expect(long.ok && longAgain.ok && long.document !== longAgain.document).toBe(true)
    // Not kept, so its limits are walked each time it is asked.
    documents.overLimits(POD, (long as { document: DocumentNode }).document)
    documents.overLimits(POD, (longAgain as { document: DocumentNode }).document)
    expect(walks).toBe(2)
  })

  it('drops the oldest text when it holds as many as it may', () => {
    const documents = new ParsedDocuments(() => [], 2)
    const documentOf = (text: string) => {
      const parsed = documents.parse(text)
      return parsed.ok ? parsed.document : undefined
    }
    const [a, b, c] = ['{ a }', '{ b }', '{ c }'].map(documentOf)
    // '{ c }' pushed '{ a }' out: '{ b }' and '{ c }' are still kept.
    expect(documentOf('{ c }')).toBe(c)
    expect(documentOf('{ b }')).toBe(b)
    expect(documentOf('{ a }')).not.toBe(a)
  })
})
