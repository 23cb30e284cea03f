import { getIntrospectionQuery } from 'graphql'
import { describe, expect, it } from 'vitest'
import {
  documentBudgetError,
  MAX_DOCUMENT_DIRECTIVES,
  MAX_DOCUMENT_NESTING,
  MAX_DOCUMENT_OPERATIONS,
  MAX_DOCUMENT_TOKENS,
  MAX_FRAGMENT_DEFINITIONS,
  MAX_FRAGMENT_SPREADS,
} from './document-budget.js'
import { parseDocument } from './document-parse.js'

const rep = (n: number, f: (i: number) => string) =>
  Array.from({ length: n }, (_, i) => f(i)).join(' ')

/** The message of the budget's refusal of `source`, or undefined when it is within the budget. */
const refusal = (source: string) => documentBudgetError(source)?.message

describe('documentBudgetError', () => {
  it(`passes ${MAX_DOCUMENT_TOKENS} tokens and stops at the next, where it is`, () => {
    // `{`, `}` and one `__typename` per field: n + 2 tokens. Comments are not tokens.
    const fields = (n: number) => `# ${'x'.repeat(100_000)}\n{ ${rep(n, () => '__typename')} }`
    expect(refusal(fields(MAX_DOCUMENT_TOKENS - 2))).toBeUndefined()
    const error = documentBudgetError(fields(MAX_DOCUMENT_TOKENS - 1))!
    expect(error.message).toBe(
      `this document has more than ${MAX_DOCUMENT_TOKENS} tokens; the limit is ${MAX_DOCUMENT_TOKENS}: split it into smaller documents`,
    )
    expect(error.extensions).toEqual({ code: 'DOCUMENT_TOO_LARGE' })
    // The token over the bound: the closing `}` after the last of the fields.
    expect(error.locations).toEqual([{ line: 2, column: 3 + (MAX_DOCUMENT_TOKENS - 1) * 11 }])
    // A megabyte of tokens is refused having read one token over the bound, not the megabyte.
    expect(documentBudgetError(fields(100_000))!.locations).toEqual(error.locations)
  })

  it(`passes nesting ${MAX_DOCUMENT_NESTING} deep, of any bracket, and stops one deeper`, () => {
    const nested = (n: number) =>
      `{ gpuTypes(input: { id: ${'['.repeat(n - 3)}"x"${']'.repeat(n - 3)} }) { id } }`
    expect(refusal(nested(MAX_DOCUMENT_NESTING))).toBeUndefined()
    expect(refusal(nested(MAX_DOCUMENT_NESTING + 1))).toBe(
      `this document nests {, [ and ( more than ${MAX_DOCUMENT_NESTING} levels deep; the limit is ${MAX_DOCUMENT_NESTING}`,
    )
    const selections = (n: number) => `${'{ myself '.repeat(n - 1)}{ id }${' }'.repeat(n - 1)}`
    expect(refusal(selections(MAX_DOCUMENT_NESTING))).toBeUndefined()
    expect(refusal(selections(MAX_DOCUMENT_NESTING + 1))).toMatch(/^this document nests/)
    // 20 000 brackets, which overflowed the parser's stack, are refused before any parse.
    expect(refusal(nested(20_000))).toMatch(/^this document nests/)
  })

  it(`passes ${MAX_FRAGMENT_DEFINITIONS} fragments and stops one more`, () => {
    const chain = (n: number) =>
      `query { ...F0 } ${rep(n - 1, (i) => `fragment F${i} on Query { ...F${i + 1} }`)} fragment F${n - 1} on Query { __typename }`
    expect(refusal(chain(MAX_FRAGMENT_DEFINITIONS))).toBeUndefined()
    expect(refusal(chain(MAX_FRAGMENT_DEFINITIONS + 1))).toBe(
      `this document defines more than ${MAX_FRAGMENT_DEFINITIONS} fragments; the limit is ${MAX_FRAGMENT_DEFINITIONS}`,
    )
    // A field, an argument or an operation called `fragment` is no fragment.
    expect(
      refusal(
        `query fragment { ${rep(MAX_FRAGMENT_DEFINITIONS + 1, (i) => `a${i}: fragment(fragment: fragment)`)} }`,
      ),
    ).toBeUndefined()
  })

  it(`passes ${MAX_FRAGMENT_SPREADS} spreads and stops one more; inline fragments are not spreads`, () => {
    const spreads = (n: number) => `{ ${rep(n, () => '...F')} } fragment F on Query { __typename }`
    expect(refusal(spreads(MAX_FRAGMENT_SPREADS))).toBeUndefined()
    expect(refusal(spreads(MAX_FRAGMENT_SPREADS + 1))).toBe(
      `this document spreads fragments (...Name) more than ${MAX_FRAGMENT_SPREADS} times; the limit is ${MAX_FRAGMENT_SPREADS}`,
    )
    expect(
      refusal(`{ ${rep(MAX_FRAGMENT_SPREADS + 1, () => '... on Query { __typename }')} }`),
    ).toBeUndefined()
  })

  it(`passes ${MAX_DOCUMENT_DIRECTIVES} directives and stops one more`, () => {
    const directives = (n: number) => `{ __typename ${rep(n, () => '@include(if: true)')} }`
    expect(refusal(directives(MAX_DOCUMENT_DIRECTIVES))).toBeUndefined()
    expect(refusal(directives(MAX_DOCUMENT_DIRECTIVES + 1))).toBe(
      `this document has more than ${MAX_DOCUMENT_DIRECTIVES} directives; the limit is ${MAX_DOCUMENT_DIRECTIVES}`,
    )
  })

  it(`passes ${MAX_DOCUMENT_OPERATIONS} operations, named or not, and stops one more`, () => {
    // Fragments are definitions too, but not operations.
    const operations = (n: number) =>
      `${rep(n - 1, (i) => `query Q${i}($v: Int) { __typename }`)} { __typename } ` +
      rep(MAX_FRAGMENT_DEFINITIONS, (i) => `fragment F${i} on Query { __typename }`)
    expect(refusal(operations(MAX_DOCUMENT_OPERATIONS))).toBeUndefined()
    expect(refusal(operations(MAX_DOCUMENT_OPERATIONS + 1))).toBe(
      `this document defines more than ${MAX_DOCUMENT_OPERATIONS} operations; the limit is ${MAX_DOCUMENT_OPERATIONS}: send them in separate requests`,
    )
  })

  it("passes real clients' documents", () => {
    for (const source of [
      getIntrospectionQuery({
        descriptions: true,
        specifiedByUrl: true,
        directiveIsRepeatable: true,
        schemaDescription: true,
        inputValueDeprecation: true,
      }),
      // runpod-python 1.12's create_pod, its env inlined (a large one: 200 variables).
      `mutation { podFindAndDeployOnDemand(input: { cloudType: ALL, gpuCount: 1, volumeInGb: 40,
        containerDiskInGb: 40, minVcpuCount: 2, minMemoryInGb: 15, gpuTypeId: "NVIDIA GeForce RTX 4090",
        name: "x", imageName: "runpod/pytorch", dockerArgs: "", ports: "8888/http,22/tcp",
        volumeMountPath: "/workspace", env: [${rep(200, (i) => `{ key: "K${i}", value: "v" }`)}] })
        { id imageName env machineId machine { podHostId } } }`,
      // runpodctl's pod listing.
      `query myPods { myself { pods { id containerDiskInGb costPerHr desiredStatus dockerArgs
        dockerId env gpuCount imageName lastStatusChange machineId memoryInGb name podType port
        ports uptimeSeconds vcpuCount volumeInGb volumeMountPath runtime { ports { ip isIpPublic
        privatePort publicPort type } uptimeInSeconds gpus { id gpuUtilPercent memoryUtilPercent }
        container { cpuPercent memoryPercent } } machine { gpuDisplayName location podHostId } } } }`,
    ]) {
      expect(refusal(source), source.slice(0, 60)).toBeUndefined()
    }
  })

  it('leaves a document that does not lex to the parser, which reports its syntax error', () => {
    expect(refusal('{ "unterminated }')).toBeUndefined()
    const parsed = parseDocument('{ "unterminated }')
    expect(parsed.ok === false && !parsed.overBudget && parsed.error.message).toMatch(
      /^Syntax Error: Unterminated string/,
    )
    const over = parseDocument(`{ ${rep(MAX_DOCUMENT_DIRECTIVES + 1, () => '@a')} }`)
    expect(over.ok === false && over.overBudget).toBe(true)
  })
})
