import {
  defaultFieldResolver,
  type GraphQLEnumType,
  type GraphQLNonNull,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLSchema,
} from 'graphql'

/**
 * What one GraphQL request may cost to run (docs/graphql.md, "Limits"): every field value
 * resolved costs 1, and a resolver that answers later (it reads the store or the catalog)
 * costs STORE_READ_COST more. The static limits of query-limits.ts count the fields of the
 * document once; a field under a list resolves once per item, so a document of 500 fields
 * could still make millions of values (aliases inside `__schema { types { fields ... } } }`)
 * or thousands of reads of the store (`gpuTypes { lowestPrice }` a few hundred times), each
 * holding the event loop for a second or more without a key.
 *
 * graphql-js's full introspection query costs about 5 300 here, runpodctl's pod listing about
 * 150 per pod.
 */
export const MAX_EXECUTION_COST = 100_000
/**
 * What a request without a key may cost: the public catalog queries and introspection. At
 * MAX_EXECUTION_COST, 100 aliases of `__schema { types { name fields { name } } }` (5 KB)
 * answered 840 KB and held the event loop 150 to 330 ms, before any key was asked for (issue
 * 27). The full introspection query (every option on) costs about 5 700, the largest catalog
 * query (gpuTypes and lowestPrice with every field, twice, cpuTypes, the public models) about
 * 3 100 on the demo fleet; at 20 000 a keyless request runs for a few tens of milliseconds.
 */
export const MAX_KEYLESS_EXECUTION_COST = 20_000
/** The extra cost of a resolver that returns a promise: a read of the store or the catalog. */
export const STORE_READ_COST = 100

/** One request's spending; once it is over, every remaining field resolves to null at once. */
export class ExecutionBudget {
  spent = 0

  /** `limit`: MAX_EXECUTION_COST, or MAX_KEYLESS_EXECUTION_COST without a key. */
  constructor(readonly limit: number = MAX_EXECUTION_COST) {}

  get exceeded(): boolean {
    return this.spent > this.limit
  }

  /** Spends `cost`; false once the budget is exceeded. */
  spend(cost: number): boolean {
    this.spent += cost
    return !this.exceeded
  }
}

const BUDGET = Symbol('podyard.executionBudget')
const METERED = Symbol('podyard.metered')

/** The part of a GraphQL context that carries its request's budget. */
export function budgetContext(budget: ExecutionBudget): { [BUDGET]: ExecutionBudget } {
  return { [BUDGET]: budget }
}

type Resolve = NonNullable<
  ReturnType<NonNullable<ReturnType<GraphQLSchema['getQueryType']>>['getFields']>[string]['resolve']
>

/**
 * The cheapest value of a type that raises no error: null where null is allowed, else an empty
 * list, a zero, an empty object. Nulls in non-null fields would each make an error (with a
 * stack trace), and a request over its budget would then spend its time making those.
 */
function emptyValueOf(type: GraphQLOutputType): unknown {
  if (kindOf(type) !== 'GraphQLNonNull') return null
  const inner = (type as GraphQLNonNull<GraphQLOutputType>).ofType
  switch (kindOf(inner)) {
    case 'GraphQLList':
      return []
    case 'GraphQLEnumType':
      return (inner as GraphQLEnumType).getValues()[0]?.value ?? null
    case 'GraphQLObjectType':
      return {}
    case 'GraphQLScalarType': {
      const name = (inner as { name: string }).name
      return name === 'Int' || name === 'Float' ? 0 : name === 'Boolean' ? false : ''
    }
    default:
      return null
  }
}

/**
 * The class of a type by its `Symbol.toStringTag`, not `instanceof`: mercurius builds its schema
 * with graphql's CommonJS build, and our ESM imports of graphql's `is...Type` helpers refuse
 * its objects as "from another module or realm".
 */
const kindOf = (type: unknown): string => Object.prototype.toString.call(type).slice(8, -1)

const isPromiseLike = (value: unknown): value is PromiseLike<unknown> =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as { then?: unknown }).then === 'function'

/**
 * Makes every field of the schema's object types, introspection's included, spend from the
 * request's budget before it resolves, and resolve to an empty value once the budget is exceeded:
 * the rest of the execution then costs next to nothing, and the route answers with an error
 * instead of the data (graphql-routes.ts). Introspection's types are shared by every schema
 * of the process, so a resolver is metered once, however many schemas are built.
 */
export function meterResolvers(schema: GraphQLSchema): void {
  for (const type of Object.values(schema.getTypeMap())) {
    if (kindOf(type) !== 'GraphQLObjectType') continue
    for (const field of Object.values((type as GraphQLObjectType).getFields())) {
      const resolve: Resolve = field.resolve ?? defaultFieldResolver
      if ((resolve as { [METERED]?: true })[METERED]) continue
      const metered: Resolve = (source, args, context, info) => {
        const budget = (context as { [BUDGET]?: ExecutionBudget } | undefined)?.[BUDGET]
        if (budget === undefined) return resolve(source, args, context, info)
        if (!budget.spend(1)) return emptyValueOf(info.returnType)
        const value = resolve(source, args, context, info)
        if (isPromiseLike(value)) budget.spend(STORE_READ_COST)
        return value
      }
      Object.defineProperty(metered, METERED, { value: true })
      field.resolve = metered
    }
  }
}
