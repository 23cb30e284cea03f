import { randomFillSync } from 'node:crypto'

const lowerAlnum = 'abcdefghijklmnopqrstuvwxyz0123456789'
const base62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'

/** Random bytes drawn 4 KiB at a time: a call to the system's generator per hundred ids, not each. */
const stringEntropy = Buffer.alloc(4096)
let stringEntropyAt = stringEntropy.length

function randomByte(): number {
  if (stringEntropyAt === stringEntropy.length) {
    randomFillSync(stringEntropy)
    stringEntropyAt = 0
  }
  return stringEntropy[stringEntropyAt++]!
}

/** Uniform random string over an alphabet (rejection sampling keeps it unbiased). */
export function randomString(length: number, alphabet: string): string {
  const limit = 256 - (256 % alphabet.length)
  let out = ''
  while (out.length < length) {
    const byte = randomByte()
    if (byte < limit) out += alphabet[byte % alphabet.length]
  }
  return out
}

/**
 * Id shapes follow the ones RunPod's clients see (wire-compat §8.5): pods and endpoints are
 * 14 lowercase alphanumerics, templates and volumes 10; ours are recognisable by kind only
 * through the API that returns them.
 */
export const newId = {
  account: () => `acct_${randomString(14, lowerAlnum)}`,
  user: () => `user_${randomString(14, lowerAlnum)}`,
  apiKey: () => `key_${randomString(14, lowerAlnum)}`,
  pod: () => randomString(14, lowerAlnum),
  endpoint: () => randomString(14, lowerAlnum),
  template: () => randomString(10, lowerAlnum),
  networkVolume: () => randomString(10, lowerAlnum),
  allocation: () => `alloc_${randomString(14, lowerAlnum)}`,
  release: () => `rel_${randomString(14, lowerAlnum)}`,
  cluster: () => randomString(14, lowerAlnum),
  creditEntry: () => `cred_${randomString(14, lowerAlnum)}`,
  secret: (length: number) => randomString(length, base62),
}

/** The millisecond and the 12-bit counter of the last `timeOrderedUuid` (monotonic within a process). */
let lastUuidMs = 0
let uuidCounter = 0
const HEX_BYTES = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'))
/** Random bytes drawn 4 KiB at a time: one `randomFillSync` per 409 ids (10 bytes each). */
const uuidEntropy = Buffer.alloc(4090)
let uuidEntropyAt = uuidEntropy.length

/**
 * A UUID of version 7 (RFC 9562): 48 bits of Unix milliseconds, then a 12-bit counter that keeps
 * ids made in one millisecond in order, then 62 random bits. Job ids are these: ids made one after
 * the other sort one after the other, so each new job's entry lands at the end of the jobs' id
 * index instead of on a random page of it, which cut the cost of inserting a job on SQLite by 40 to 50 %
 * (bench/README.md, step 19). The 62 random bits keep ids unguessable; the creation time they
 * reveal is the job's own `createdAt`.
 */
export function timeOrderedUuid(nowMs = Date.now()): string {
  if (uuidEntropyAt === uuidEntropy.length) {
    randomFillSync(uuidEntropy)
    uuidEntropyAt = 0
  }
  const r = uuidEntropyAt
  uuidEntropyAt += 10
  if (nowMs > lastUuidMs) {
    lastUuidMs = nowMs
    // A random start below 0x400 leaves room for 3 000 more ids in the same millisecond.
    uuidCounter = ((uuidEntropy[r + 8]! << 8) | uuidEntropy[r + 9]!) & 0x3ff
  } else if (++uuidCounter > 0xfff) {
    // Over 4 096 in one millisecond, or the clock went back: borrow the next millisecond.
    lastUuidMs += 1
    uuidCounter = 0
  }
  // Hex of the 48-bit time as two small integers: a double's toString(16) is ten times slower.
  const high = Math.floor(lastUuidMs / 0x10000)
  const low = lastUuidMs - high * 0x10000
  const hex = HEX_BYTES
  const e = uuidEntropy
  return (
    `${high.toString(16).padStart(8, '0')}-${low.toString(16).padStart(4, '0')}-` +
    `7${uuidCounter.toString(16).padStart(3, '0')}-` +
    // The RFC 4122 variant: the top two bits of the fourth group are 10.
    `${hex[(e[r]! & 0x3f) | 0x80]}${hex[e[r + 1]!]}-` +
    `${hex[e[r + 2]!]}${hex[e[r + 3]!]}${hex[e[r + 4]!]}${hex[e[r + 5]!]}${hex[e[r + 6]!]}${hex[e[r + 7]!]}`
  )
}
