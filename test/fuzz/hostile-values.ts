import fc from 'fast-check'

/**
 * Values an attacker sends where a field, a parameter or a body is expected: wrong types, huge
 * and odd strings, numbers at the edges, JSON nested far past the server's bound. Deep values
 * are text, never objects: the suite's own JSON.stringify would overflow on them.
 */

/** Strings that have broken parsers, loggers and databases elsewhere. */
const ODD_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\uD800',
  '\uDFFF\uD800',
  '\uFFFE',
  '\u202Eevil',
  '\u200B',
  'e\u0301\u0301\u0301',
  '🧨💥',
  'ﷺ'.repeat(50),
  '../../etc/passwd',
  '..',
  '.',
  '/',
  '//',
  '%00',
  '%2e%2e%2f',
  "'; drop table jobs; --",
  '${jndi:ldap://127.0.0.1/a}',
  '<script>alert(1)</script>',
  '{"__proto__":{"polluted":true}}',
  '__proto__',
  'constructor',
  'null',
  'undefined',
  'NaN',
  '-0',
  '1e309',
  'true',
  '\r\nX-Injected: 1',
  'a'.repeat(257),
]

/** Numbers at the edges of JSON, JavaScript and SQL integers. */
const EDGE_NUMBERS = [
  0,
  -0,
  -1,
  1,
  2 ** 31,
  -(2 ** 31) - 1,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 63),
  2 ** 64,
  1e308,
  -1e308,
  5e-324,
  0.1,
  1.5,
  Number.MAX_SAFE_INTEGER,
]

export const oddString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...ODD_STRINGS),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
)

/** A string of 64 KB to 2 MB (rarely larger: bodies are capped by the routes anyway). */
export const hugeString: fc.Arbitrary<string> = fc
  .constantFrom(64 * 1024, 256 * 1024, 2 * 1024 * 1024)
  .map((size) => 'x'.repeat(size))

export const edgeNumber: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(...EDGE_NUMBERS),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
)

/** JSON text nested `depth` levels deep, as arrays or objects. */
export const deepJsonText: fc.Arbitrary<string> = fc
  .tuple(fc.constantFrom(255, 256, 257, 300, 5_000, 50_000), fc.boolean())
  .map(([depth, objects]) =>
    objects
      ? '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)
      : '['.repeat(depth) + ']'.repeat(depth),
  )

/**
 * A placeholder for JSON nested deeper than the server's bound inside an otherwise ordinary
 * value: `withDeepValues` turns the JSON text of the value into one with the deep parts.
 */
export const deepPlaceholder: fc.Arbitrary<string> = fc
  .constantFrom(257, 1_000, 5_000, 20_000)
  .map((depth) => `\u0000deep:${depth}\u0000`)

/** `JSON.stringify(value)` with each `deepPlaceholder` replaced by JSON that deep. */
export function withDeepValues(text: string): string {
  return text.replace(/"\\u0000deep:(\d+)\\u0000"/g, (_match, depth: string) => {
    const n = Number(depth)
    return '['.repeat(n) + '"x"' + ']'.repeat(n)
  })
}

/** Any JSON value of the wrong kind for wherever it goes, as a value (deep ones as placeholders). */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: oddString },
  { weight: 3, arbitrary: edgeNumber },
  { weight: 1, arbitrary: fc.constantFrom(true, false, null) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
  { weight: 1, arbitrary: fc.array(oddString, { maxLength: 50 }) },
  { weight: 1, arbitrary: fc.dictionary(oddString, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 8 }) },
  { weight: 2, arbitrary: deepPlaceholder },
)

/** Body texts that are not what any route expects. */
export const hostileBodyText: fc.Arbitrary<string> = fc.oneof(
  deepJsonText,
  // Deep where a job's input, a worker's output or a template's env is read.
  fc
    .tuple(fc.constantFrom('input', 'input', 'output', 'env', 'variables'), deepJsonText)
    .map(([key, deep]) => (key === 'input' ? `{"input":{"v":${deep}}}` : `{"${key}":${deep}}`)),
  fc
    .tuple(fc.constantFrom('input', 'output'), deepJsonText)
    .map(([key, deep]) => (key === 'input' ? `{"input":{"v":${deep}}}` : `{"${key}":${deep}}`)),
  fc.constantFrom(
    '',
    ' ',
    '{',
    '{"a":',
    '[1,2',
    '"unterminated',
    '\uFEFF{}',
    'null',
    '[]',
    '0',
    '-',
    '1e99999',
    '{"__proto__":{"x":1}}',
    '{"constructor":{"prototype":{"x":1}}}',
    '{"a":1,"a":2}',
    'not json at all',
    '\u0000\u0001\u0002',
  ),
  fc.string({ unit: 'binary', maxLength: 200 }),
  hugeString.map((s) => `{"input":{"s":"${s}"}}`),
  hugeString.map((s) => `"${s}`),
)

/** Path segments that are not ids: odd, long, dotted, or bad percent-encoding (sent raw). */
export const hostileSegment: fc.Arbitrary<{ raw: string }> = fc.oneof(
  oddString.map((s) => ({ raw: encodeURIComponent(s.replace(/[\uD800-\uDFFF]/g, '?')) })),
  fc
    .constantFrom('%', '%zz', '%E0%A4%A', '%C0%AF', '%00', '%2F', '%2e%2e', '..', '.', '%FF%FE')
    .map((raw) => ({ raw })),
  fc.integer({ min: 90, max: 400 }).map((n) => ({ raw: 'a'.repeat(n) })),
)

/** Content types a body may be labelled with, the route's own one most often. */
export const contentType: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 12, arbitrary: fc.constant('application/json') },
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      undefined,
      'application/json; charset=utf-8',
      'application/json; charset=utf-16',
      'APPLICATION/JSON',
      'text/plain',
      'application/x-www-form-urlencoded',
      'application/octet-stream',
      'multipart/form-data; boundary=x',
      'application/graphql',
      'application/problem+json',
      'invalid',
      'application/json, text/html',
      'text/html; charset=\u00e9',
    ),
  },
)
