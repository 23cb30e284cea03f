import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import type { Store } from '../../src/store/open-store.js'
import { testStores } from '../support/stores.js'

/**
 * Both dialects' migrations build the same schema, and that schema is committed: each
 * migration's effect shows in review as a diff of test/platform/schema-snapshot.json, and a migration
 * that forgets a column in one dialect fails here. After a deliberate schema change, write the
 * snapshot again with `PODYARD_UPDATE_SCHEMA_SNAPSHOT=1 PODYARD_TEST_POSTGRES_URL=... npx vitest
 * run test/platform/schema-snapshot.test.ts` (both dialects, so that neither side is left out).
 */
const SNAPSHOT_PATH = join(import.meta.dirname, 'schema-snapshot.json')

interface ColumnShape {
  nullable: boolean
  type: string
}
type SchemaShape = Record<string, Record<string, ColumnShape>>
type Snapshot = Record<
  string,
  Record<string, { nullable: boolean; sqlite: string; postgres: string }>
>

async function schemaOf(store: Store): Promise<SchemaShape> {
  const tables = await store.db.introspection.getTables()
  const shape: SchemaShape = {}
  for (const table of [...tables].sort((a, b) => a.name.localeCompare(b.name))) {
    const keyColumns = await primaryKeyColumns(store, table.name)
    shape[table.name] = Object.fromEntries(
      [...table.columns]
        .sort((a, b) => a.name.localeCompare(b.name))
        .map((column) => [
          column.name,
          {
            nullable: column.isNullable && !keyColumns.has(column.name),
            type: column.dataType.toLowerCase(),
          },
        ]),
    )
  }
  return shape
}

/**
 * SQLite reports a primary key's columns as nullable unless declared `not null` (for a key that
 * is not an `integer primary key` it even lets NULL in, for compatibility with its old
 * versions); PostgreSQL's keys are never null. Every insert of ours names its key, so both are
 * compared as keys: not null.
 */
async function primaryKeyColumns(store: Store, table: string): Promise<Set<string>> {
  if (store.dialect !== 'sqlite') return new Set()
  const { rows } = await sql<{
    name: string
    pk: number
  }>`select name, pk from pragma_table_info(${table})`.execute(store.db)
  return new Set(rows.filter((row) => row.pk > 0).map((row) => row.name))
}

async function migratedSchema(open: () => Promise<Store>): Promise<SchemaShape> {
  const store = await open()
  try {
    return await schemaOf(store)
  } finally {
    await store.close()
  }
}

const stores = testStores()
const snapshot = JSON.parse(readFileSync(SNAPSHOT_PATH, 'utf8')) as Snapshot

describe('the schema both dialects migrate to', () => {
  it.each(stores)(
    '$name: tables, columns, nullability and types are the committed snapshot',
    async ({ name, open }) => {
      const schema = await migratedSchema(open)
      const expected = Object.fromEntries(
        Object.entries(snapshot).map(([table, columns]) => [
          table,
          Object.fromEntries(
            Object.entries(columns).map(([column, shape]) => [
              column,
              { nullable: shape.nullable, type: shape[name] },
            ]),
          ),
        ]),
      )
      if (process.env.PODYARD_UPDATE_SCHEMA_SNAPSHOT !== '1') expect(schema).toEqual(expected)
    },
  )

  it.runIf(stores.length === 2)(
    'SQLite and PostgreSQL have the same tables, columns and nullability',
    async () => {
      const [sqlite, postgres] = await Promise.all(
        stores.map((store) => migratedSchema(store.open)),
      )
      const untyped = (schema: SchemaShape) =>
        Object.fromEntries(
          Object.entries(schema).map(([table, columns]) => [
            table,
            Object.fromEntries(
              Object.entries(columns).map(([column, shape]) => [column, shape.nullable]),
            ),
          ]),
        )
      expect(untyped(sqlite!)).toEqual(untyped(postgres!))
      if (process.env.PODYARD_UPDATE_SCHEMA_SNAPSHOT === '1') {
        const written: Snapshot = Object.fromEntries(
          Object.entries(sqlite!).map(([table, columns]) => [
            table,
            Object.fromEntries(
              Object.entries(columns).map(([column, shape]) => [
                column,
                {
                  nullable: shape.nullable,
                  sqlite: shape.type,
                  postgres: postgres![table]![column]!.type,
                },
              ]),
            ),
          ]),
        )
        writeFileSync(SNAPSHOT_PATH, `${JSON.stringify(written, null, 2)}\n`)
      }
    },
  )
})
