import { describe, expect, it } from 'vitest'
import {
  canonicalQuery,
  canonicalUri,
  EMPTY_PAYLOAD_SHA256,
  sha256Hex,
  signingKey,
  signRequest,
  uriEncode,
} from './aws-sigv4.js'

/**
 * The vectors are AWS's own: the Signature Version 4 test suite (get-vanilla,
 * get-vanilla-query-order-key-case; credentials AKIDEXAMPLE, 2015-08-30T12:36:00Z, service
 * `service`) and the Amazon S3 API Reference, "Signature Calculations for the Authorization
 * Header: Transferring Payload in a Single Chunk" (AKIAIOSFODNN7EXAMPLE, bucket examplebucket,
 * 2013-05-24). A signer that passes them is what real S3 accepts.
 */

const SUITE = {
  credentials: {
    accessKeyId: 'AKIDEXAMPLE',
    secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  },
  scope: { region: 'us-east-1', service: 'service' },
  now: new Date('2015-08-30T12:36:00Z'),
}

const S3_DOCS = {
  credentials: {
    accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
    secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  },
  scope: { region: 'us-east-1', service: 's3' },
  now: new Date('2013-05-24T00:00:00Z'),
}

describe('AWS Signature Version 4', () => {
  it('signs the test suite’s get-vanilla', () => {
    const signed = signRequest(
      {
        method: 'GET',
        url: new URL('https://example.amazonaws.com/'),
        headers: {},
        payloadSha256: EMPTY_PAYLOAD_SHA256,
      },
      SUITE.credentials,
      SUITE.scope,
      SUITE.now,
    )
    expect(signed.canonicalRequest).toBe(
      [
        'GET',
        '/',
        '',
        'host:example.amazonaws.com',
        'x-amz-date:20150830T123600Z',
        '',
        'host;x-amz-date',
        EMPTY_PAYLOAD_SHA256,
      ].join('\n'),
    )
    expect(signed.stringToSign).toBe(
      'AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n' +
        'bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63',
    )
    expect(signed.authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, ' +
        'SignedHeaders=host;x-amz-date, ' +
        'Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
    )
    expect(signed.headers).toEqual({
      host: 'example.amazonaws.com',
      'x-amz-date': '20150830T123600Z',
      authorization: signed.authorization,
    })
  })

  it('signs the test suite’s get-vanilla-query-order-key-case (query sorted)', () => {
    const signed = signRequest(
      {
        method: 'GET',
        url: new URL('https://example.amazonaws.com/?Param2=value2&Param1=value1'),
        headers: {},
        payloadSha256: EMPTY_PAYLOAD_SHA256,
      },
      SUITE.credentials,
      SUITE.scope,
      SUITE.now,
    )
    expect(signed.canonicalRequest.split('\n')[2]).toBe('Param1=value1&Param2=value2')
    expect(signed.signature).toBe(
      'b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500',
    )
  })

  it('derives the documented signing key (iam, 2015-08-30)', () => {
    const key = signingKey(SUITE.credentials.secretAccessKey, '20150830', {
      region: 'us-east-1',
      service: 'iam',
    })
    expect(key.toString('hex')).toBe(
      'c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9',
    )
  })

  const s3 = (
    method: string,
    url: string,
    headers: Record<string, string>,
    payloadSha256 = EMPTY_PAYLOAD_SHA256,
  ) =>
    signRequest(
      {
        method,
        url: new URL(url),
        headers: { ...headers, 'x-amz-content-sha256': payloadSha256 },
        payloadSha256,
      },
      S3_DOCS.credentials,
      S3_DOCS.scope,
      S3_DOCS.now,
    )

  it('signs S3’s documented GET Object (ranged)', () => {
    const signed = s3('GET', 'https://examplebucket.s3.amazonaws.com/test.txt', {
      Range: 'bytes=0-9',
    })
    expect(signed.authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, ' +
        'SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, ' +
        'Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
    )
  })

  it('signs S3’s documented PUT Object (signed payload, `$` in the key)', () => {
    const body = 'Welcome to Amazon S3.'
    expect(sha256Hex(body)).toBe('44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072')
    const signed = s3(
      'PUT',
      'https://examplebucket.s3.amazonaws.com/test$file.text',
      { Date: 'Fri, 24 May 2013 00:00:00 GMT', 'x-amz-storage-class': 'REDUCED_REDUNDANCY' },
      sha256Hex(body),
    )
    expect(signed.canonicalRequest.split('\n')[1]).toBe('/test%24file.text')
    expect(signed.authorization).toContain(
      'SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class',
    )
    expect(signed.signature).toBe(
      '98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd',
    )
  })

  it('signs S3’s documented GET Bucket Lifecycle (bare query name) and List Objects', () => {
    expect(s3('GET', 'https://examplebucket.s3.amazonaws.com/?lifecycle', {}).signature).toBe(
      'fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543',
    )
    expect(
      s3('GET', 'https://examplebucket.s3.amazonaws.com/?prefix=J&max-keys=2', {}).signature,
    ).toBe('34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7')
  })

  it('changes the signature with any signed part', () => {
    const base = s3('GET', 'https://examplebucket.s3.amazonaws.com/test.txt', {}).signature
    expect(s3('GET', 'https://examplebucket.s3.amazonaws.com/test2.txt', {}).signature).not.toBe(
      base,
    )
    expect(s3('DELETE', 'https://examplebucket.s3.amazonaws.com/test.txt', {}).signature).not.toBe(
      base,
    )
    expect(
      s3('GET', 'https://examplebucket.s3.amazonaws.com:9000/test.txt', {}).signature,
    ).not.toBe(base)
  })

  it('encodes as RFC 3986 wants, once, with upper-case hex', () => {
    expect(uriEncode("a b/c+d=é!*'()~._-")).toBe('a%20b%2Fc%2Bd%3D%C3%A9%21%2A%27%28%29~._-')
    expect(canonicalUri('/bucket/a%20b/c d')).toBe('/bucket/a%20b/c%20d')
    expect(canonicalUri('')).toBe('/')
    expect(canonicalQuery('?list-type=2&prefix=a/b&continuation-token=x%2By')).toBe(
      'continuation-token=x%2By&list-type=2&prefix=a%2Fb',
    )
    expect(canonicalQuery('')).toBe('')
  })
})
