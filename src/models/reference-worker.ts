/**
 * The worker program of podyard's public models (docs/public-endpoints.md, "How the models
 * run"): the platform's autoscaler starts it as a managed worker of a model's endpoint, with
 * the RUNPOD_* environment every worker gets plus PODYARD_MODEL_KIND (image or text) and, when
 * the operator backs the model with a real server, PODYARD_MODEL_SERVER_URL. It takes jobs with
 * podyard/worker. The platform has validated each input before it was queued.
 */
import { serve, type WorkerJob } from '../sdk/worker/index.js'
import { serverChat, serverImage, type ModelServer } from './model-server.js'
import { renderPromptPng } from './prompt-image.js'
import { generateReferenceText, type ChatMessage, type TextResult } from './reference-text.js'

const kind = process.env.PODYARD_MODEL_KIND ?? 'image'
const modelId = process.env.PODYARD_MODEL_ID ?? 'unknown'
const server: ModelServer | null = process.env.PODYARD_MODEL_SERVER_URL
  ? {
      url: process.env.PODYARD_MODEL_SERVER_URL.replace(/\/+$/, ''),
      model: process.env.PODYARD_MODEL_SERVER_MODEL ?? null,
      apiKey: process.env.PODYARD_MODEL_SERVER_API_KEY ?? null,
    }
  : null

/** The image's content type from its first bytes (a server may send JPEG or WebP). */
function imageType(bytes: Buffer): string {
  if (bytes.subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47]))) return 'image/png'
  if (bytes[0] === 0xff && bytes[1] === 0xd8) return 'image/jpeg'
  if (bytes.subarray(8, 12).toString('ascii') === 'WEBP') return 'image/webp'
  return 'image/png'
}

interface ImageInput {
  prompt: string
  width: number
  height: number
  seed?: number
}

interface TextInput {
  messages: ChatMessage[]
  max_tokens: number
}

async function image(job: WorkerJob<ImageInput>, signal: AbortSignal) {
  const { prompt, width, height, seed } = job.input
  const bytes = server
    ? await serverImage(server, { prompt, width, height }, signal)
    : renderPromptPng(prompt, width, height, seed ?? 0)
  return { image_base64: bytes.toString('base64'), content_type: imageType(bytes), width, height }
}

async function text(job: WorkerJob<TextInput>, signal: AbortSignal) {
  const { messages, max_tokens: maxTokens } = job.input
  const result: TextResult = server
    ? await serverChat(server, messages, maxTokens, signal)
    : generateReferenceText(messages, maxTokens)
  // OpenAI's chat.completion fields next to the plain `text`, so OpenAI-minded callers find theirs.
  return {
    text: result.text,
    model: modelId,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: result.text },
        finish_reason: result.finish_reason,
      },
    ],
    usage: result.usage,
  }
}

const worker = serve(async (job, context) =>
  kind === 'text'
    ? text(job as unknown as WorkerJob<TextInput>, context.signal)
    : image(job as unknown as WorkerJob<ImageInput>, context.signal),
)
process.stdout.write(`podyard model worker ${worker.workerId} serving ${modelId} (${kind})\n`)
process.on('SIGTERM', () => {
  void worker.stop({ gracePeriodMs: 5_000 }).then(() => process.exit(0))
})
