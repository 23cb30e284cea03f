/**
 * A resolver for the egress policy in tests: answers from its own table, so that no test sends
 * a DNS query off the machine. A name may get a different answer each time (a DNS rebinding);
 * the last answer repeats. Unknown names do not resolve (ENOTFOUND), like a missing DNS record.
 */
export class TestResolver {
  private readonly answers = new Map<string, string[][]>()
  /** Every name asked for, in order. */
  readonly asked: string[] = []

  /** The answers for `name`, one per resolution; the last one repeats. */
  set(name: string, ...answers: string[][]): this {
    this.answers.set(name.toLowerCase(), answers)
    return this
  }

  readonly resolve = async (hostname: string): Promise<string[]> => {
    this.asked.push(hostname)
    const answers = this.answers.get(hostname.toLowerCase())
    if (answers === undefined || answers.length === 0) {
      const error: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`)
      error.code = 'ENOTFOUND'
      throw error
    }
    return answers.length > 1 ? answers.shift()! : answers[0]!
  }
}
