/**
 * The reference text "model": a deterministic stand-in for a language model, not AI. It answers
 * a conversation with words picked by a seeded generator whose seed is a hash of the
 * conversation, so the same messages always get the same answer, within `max_tokens`.
 */
import { estimateTokens } from '../shared/token-estimate.js'
import { fnv1a } from './prompt-image.js'
import { seededRandom } from '../shared/seeded-random.js'

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant'
  content: string
}

export interface TextResult {
  text: string
  finish_reason: 'stop' | 'length'
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number }
}

const WORDS = (
  'the a platform worker job queue endpoint model answer runs on every host with GPU CPU ' +
  'pods scale from zero and back reference stand-in deterministic text tokens reply your ' +
  'prompt is heard here are some words that carry no meaning but always come out the same ' +
  'for one input podyard serverless credits price image light river stone cloud garden'
).split(' ')

export function promptTokens(messages: ChatMessage[]): number {
  return messages.reduce((sum, m) => sum + estimateTokens(m.content), 0)
}

export function generateReferenceText(messages: ChatMessage[], maxTokens: number): TextResult {
  const conversation = messages.map((m) => `${m.role}:${m.content}`).join('\n')
  const random = seededRandom(fnv1a(conversation))
  const last = messages.at(-1)?.content ?? ''
  const wanted = 12 + Math.floor(random() * 36)
  const words = [`Reference answer to "${last.slice(0, 40)}":`]
  for (let i = 0; i < wanted; i++) words.push(WORDS[Math.floor(random() * WORDS.length)]!)
  let text = `${words.join(' ')}.`
  let finish: TextResult['finish_reason'] = 'stop'
  // Never more tokens than asked: a token is four characters (token-estimate.ts).
  if (estimateTokens(text) > maxTokens) {
    text = text.slice(0, maxTokens * 4)
    finish = 'length'
  }
  const prompt = promptTokens(messages)
  const completion = estimateTokens(text)
  return {
    text,
    finish_reason: finish,
    usage: {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
    },
  }
}
