import { buildSchema, execute, getIntrospectionQuery, parse, type GraphQLSchema } from 'graphql'
import { describe, expect, it } from 'vitest'
import {
  budgetContext,
  ExecutionBudget,
  MAX_EXECUTION_COST,
  MAX_KEYLESS_EXECUTION_COST,
  meterResolvers,
  STORE_READ_COST,
} from './execution-budget.js'
import { typeDefs } from './type-defs.js'

const schemaOf = (sdl: string): GraphQLSchema => {
  const schema = buildSchema(sdl)
  meterResolvers(schema)
  return schema
}

async function run(
  schema: GraphQLSchema,
  source: string,
  rootValue?: unknown,
  budget = new ExecutionBudget(),
) {
  const result = await execute({
    schema,
    document: parse(source),
    rootValue,
    contextValue: budgetContext(budget),
  })
  return { budget, result }
}

describe('ExecutionBudget and meterResolvers', () => {
  it('the full introspection query of our schema costs well under the budget', async () => {
    const { budget, result } = await run(schemaOf(typeDefs), getIntrospectionQuery())
    expect(result.errors).toBeUndefined()
    expect(budget.exceeded).toBe(false)
    expect(budget.spent).toBeGreaterThan(1000)
    expect(budget.spent).toBeLessThan(MAX_EXECUTION_COST / 4)
  })

  it('a request without a key has a smaller budget, in which the full introspection query fits', async () => {
    const schema = schemaOf(typeDefs)
    const everything = getIntrospectionQuery({
      descriptions: true,
      specifiedByUrl: true,
      directiveIsRepeatable: true,
      schemaDescription: true,
      inputValueDeprecation: true,
    })
    const keyless = new ExecutionBudget(MAX_KEYLESS_EXECUTION_COST)
    const { result } = await run(schema, everything, undefined, keyless)
    expect(result.errors).toBeUndefined()
    expect(keyless.limit).toBe(MAX_KEYLESS_EXECUTION_COST)
    // Room for the schema to grow to twice its size before keyless introspection is refused.
    expect(keyless.spent).toBeLessThan(MAX_KEYLESS_EXECUTION_COST / 2)
    // 100 aliases of the types' fields, 5 KB, are past it (they cost about 40 000).
    const aliases = Array.from(
      { length: 100 },
      (_, i) => `a${i}: __schema { types { name fields { name } } }`,
    ).join(' ')
    const flood = new ExecutionBudget(MAX_KEYLESS_EXECUTION_COST)
    await run(schema, `{ ${aliases} }`, undefined, flood)
    expect(flood.exceeded).toBe(true)
    expect(new ExecutionBudget().limit).toBe(MAX_EXECUTION_COST)
  })

  it('counts each value under a list, and each promise as a read of the store', async () => {
    const schema = schemaOf('type Query { items: [Item!]! } type Item { id: Int! later: Int }')
    const items = Array.from({ length: 10 }, (_, id) => ({ id, later: async () => id }))
    const { budget, result } = await run(schema, '{ items { id later } }', { items })
    expect(result.data).toEqual({ items: items.map(({ id }) => ({ id, later: id })) })
    // items, then per item: id, later and its read.
    expect(budget.spent).toBe(1 + 10 * (2 + STORE_READ_COST))
  })

  it('past the budget every field resolves to an empty value, without an error each', async () => {
    const schema = schemaOf(
      'type Query { items: [Item!]! } type Item { id: Int! name: String! on: Boolean! tags: [String!]! next: Item! maybe: Int }',
    )
    const items = Array.from({ length: MAX_EXECUTION_COST }, (_, id) => ({
      id,
      name: `n${id}`,
      on: true,
      tags: ['t'],
      next: { id: -1, name: '', on: false, tags: [], maybe: 1 },
      maybe: 1,
    }))
    const { budget, result } = await run(
      schema,
      '{ items { id name on tags next { id } maybe } }',
      {
        items,
      },
    )
    expect(budget.exceeded).toBe(true)
    expect(result.errors).toBeUndefined()
    const data = result.data as { items: unknown[] }
    expect(data.items.at(-1)).toEqual({
      id: 0,
      name: '',
      on: false,
      tags: [],
      next: { id: 0 },
      maybe: null,
    })
  })
})
