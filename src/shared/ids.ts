import { randomBytes } from 'node:crypto'

const lowerAlnum = 'abcdefghijklmnopqrstuvwxyz0123456789'
const base62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'

/** Uniform random string over an alphabet (rejection sampling keeps it unbiased). */
export function randomString(length: number, alphabet: string): string {
  const limit = 256 - (256 % alphabet.length)
  let out = ''
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < limit) out += alphabet[byte % alphabet.length]
      if (out.length === length) break
    }
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
  creditEntry: () => `cred_${randomString(14, lowerAlnum)}`,
  secret: (length: number) => randomString(length, base62),
}
