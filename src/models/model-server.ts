/**
 * Adapters from a model worker to a real model server, for an operator who backs a public model
 * with one (config `models.definitions.<id>.server`): an OpenAI-compatible API, whose base URL
 * (with `/v1`) the worker gets as PODYARD_MODEL_SERVER_URL. Text calls `/chat/completions`;
 * images call `/images/generations` with `response_format: b64_json`.
 */
import type { ChatMessage, TextResult } from './reference-text.js'

export interface ModelServer {
  url: string
  model: string | null
  apiKey: string | null
}

/** How long one call to the model server may take before the job fails. */
export const SERVER_TIMEOUT_MS = 110_000

async function post(server: ModelServer, path: string, body: unknown, signal: AbortSignal) {
  const response = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(server.apiKey ? { authorization: `Bearer ${server.apiKey}` } : {}),
    },
    body: JSON.stringify(body),
    signal: AbortSignal.any([signal, AbortSignal.timeout(SERVER_TIMEOUT_MS)]),
  })
  const text = await response.text()
  if (!response.ok) {
    throw new Error(`the model server answered ${response.status}: ${text.slice(0, 500)}`)
  }
  try {
    return JSON.parse(text) as Record<string, unknown>
  } catch {
    throw new Error(`the model server answered no JSON: ${text.slice(0, 200)}`)
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

export async function serverChat(
  server: ModelServer,
  messages: ChatMessage[],
  maxTokens: number,
  signal: AbortSignal,
): Promise<TextResult> {
  const answer = await post(
    server,
    '/chat/completions',
    { model: server.model ?? 'default', messages, max_tokens: maxTokens, stream: false },
    signal,
  )
  const choice = Array.isArray(answer.choices) ? answer.choices[0] : undefined
  const content = isObject(choice) && isObject(choice.message) ? choice.message.content : undefined
  if (typeof content !== 'string') throw new Error('the model server answered no message content')
  const usage = isObject(answer.usage) ? answer.usage : {}
  const prompt = typeof usage.prompt_tokens === 'number' ? usage.prompt_tokens : 0
  const completion = typeof usage.completion_tokens === 'number' ? usage.completion_tokens : 0
  return {
    text: content,
    finish_reason: isObject(choice) && choice.finish_reason === 'length' ? 'length' : 'stop',
    usage: {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
    },
  }
}

export async function serverImage(
  server: ModelServer,
  input: { prompt: string; width: number; height: number },
  signal: AbortSignal,
): Promise<Buffer> {
  const answer = await post(
    server,
    '/images/generations',
    {
      model: server.model ?? 'default',
      prompt: input.prompt,
      size: `${input.width}x${input.height}`,
      n: 1,
      response_format: 'b64_json',
    },
    signal,
  )
  const first = Array.isArray(answer.data) ? answer.data[0] : undefined
  if (!isObject(first) || typeof first.b64_json !== 'string') {
    throw new Error('the image server answered no data[0].b64_json')
  }
  return Buffer.from(first.b64_json, 'base64')
}
