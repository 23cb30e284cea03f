/**
 * The token count podyard prices text by when a model server reports none: one token per four
 * characters, rounded up (OpenAI's rule of thumb for English). Shared by the platform, which
 * prices a job before it runs, and the reference text worker, which reports its usage.
 */
export const CHARS_PER_TOKEN = 4

export function estimateTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN)
}
