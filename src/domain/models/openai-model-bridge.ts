/**
 * OpenAI's API in front of a public text model (docs/public-endpoints.md, "OpenAI-compatible
 * route"): an OpenAI request becomes the model's job input, the job's output an OpenAI
 * response. Pure: the routes do the I/O.
 */
import type { ChatMessage } from './model.js'

export type OpenAIModelCall = 'chat' | 'completion'

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** A message's content: a string, or OpenAI's content parts of which the text ones count. */
function textOf(content: unknown): unknown {
  if (!Array.isArray(content)) return content
  return content
    .map((part) => (isObject(part) && part.type === 'text' ? part.text : undefined))
    .filter((text) => typeof text === 'string')
    .join('')
}

/**
 * The model's input for an OpenAI body: `messages` (chat) or `prompt` (completions), and
 * `max_tokens` (or `max_completion_tokens`). The model's validation judges the result, so a
 * bad body is refused with the same problems as a bad `/runsync` input.
 */
export function modelInputOf(call: OpenAIModelCall, body: unknown): Record<string, unknown> {
  if (!isObject(body)) return {}
  const maxTokens = body.max_tokens ?? body.max_completion_tokens
  const limit = maxTokens === undefined || maxTokens === null ? {} : { max_tokens: maxTokens }
  if (call === 'completion') {
    const prompt = Array.isArray(body.prompt) ? body.prompt.join('') : body.prompt
    return { ...(prompt !== undefined ? { prompt } : {}), ...limit }
  }
  const messages = Array.isArray(body.messages)
    ? body.messages.map((m: unknown) =>
        isObject(m) ? { ...m, content: textOf(m.content) } : (m as ChatMessage),
      )
    : body.messages
  return { ...(messages !== undefined ? { messages } : {}), ...limit }
}

/** Whether the caller asked for server-sent events. */
export function wantsEvents(body: unknown): boolean {
  return isObject(body) && body.stream === true
}

interface TextOutput {
  text: string
  finishReason: string
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null
}

/** The text, finish reason and usage of a text model's output (its `choices` or its `text`). */
export function textOutput(output: unknown): TextOutput | undefined {
  if (!isObject(output)) return undefined
  const choice = Array.isArray(output.choices) ? output.choices[0] : undefined
  const message = isObject(choice) && isObject(choice.message) ? choice.message : undefined
  const text =
    typeof message?.content === 'string'
      ? message.content
      : typeof output.text === 'string'
        ? output.text
        : undefined
  if (text === undefined) return undefined
  const usage = isObject(output.usage) ? output.usage : undefined
  const prompt = Number(usage?.prompt_tokens)
  const completion = Number(usage?.completion_tokens)
  return {
    text,
    finishReason:
      isObject(choice) && typeof choice.finish_reason === 'string' ? choice.finish_reason : 'stop',
    usage:
      Number.isFinite(prompt) && Number.isFinite(completion)
        ? {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt + completion,
          }
        : null,
  }
}

export interface ResponseContext {
  call: OpenAIModelCall
  jobId: string
  modelId: string
  /** Unix seconds. */
  created: number
}

/** `chat.completion` or `text_completion`, as OpenAI answers a call that does not stream. */
export function openaiResponse(context: ResponseContext, out: TextOutput) {
  const { call, jobId, modelId, created } = context
  const common = {
    id: `${call === 'chat' ? 'chatcmpl' : 'cmpl'}-${jobId}`,
    object: call === 'chat' ? 'chat.completion' : 'text_completion',
    created,
    model: modelId,
  }
  const choice =
    call === 'chat'
      ? {
          index: 0,
          message: { role: 'assistant', content: out.text },
          finish_reason: out.finishReason,
        }
      : { index: 0, text: out.text, logprobs: null, finish_reason: out.finishReason }
  return { ...common, choices: [choice], ...(out.usage ? { usage: out.usage } : {}) }
}

/**
 * The same answer as server-sent event payloads: the text in one chunk (the models answer whole,
 * they do not stream), a closing chunk with the finish reason (and usage), then `[DONE]`.
 */
export function openaiEvents(context: ResponseContext, out: TextOutput): string[] {
  const { call, jobId, modelId, created } = context
  const common = {
    id: `${call === 'chat' ? 'chatcmpl' : 'cmpl'}-${jobId}`,
    object: call === 'chat' ? 'chat.completion.chunk' : 'text_completion',
    created,
    model: modelId,
  }
  const content =
    call === 'chat'
      ? { index: 0, delta: { role: 'assistant', content: out.text }, finish_reason: null }
      : { index: 0, text: out.text, logprobs: null, finish_reason: null }
  const end =
    call === 'chat'
      ? { index: 0, delta: {}, finish_reason: out.finishReason }
      : { index: 0, text: '', logprobs: null, finish_reason: out.finishReason }
  return [
    JSON.stringify({ ...common, choices: [content] }),
    JSON.stringify({ ...common, choices: [end], ...(out.usage ? { usage: out.usage } : {}) }),
    '[DONE]',
  ]
}

/** `GET /v1/models`: the one model behind the route. */
export function openaiModelList(modelId: string, created: number) {
  return { object: 'list', data: [{ id: modelId, object: 'model', created, owned_by: 'podyard' }] }
}
