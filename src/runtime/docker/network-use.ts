/**
 * Keeps the starts and the removals of one tenant network apart. A network goes when its
 * account's last container on the engine does, and a start creates it when missing; but a
 * container that is created and not yet started is not among the network's containers, so
 * without this a removal could take the network from under a start of the same account
 * ("network ... not found", the pod ERROR).
 */
export class NetworkUse {
  private readonly starting = new Map<string, number>()
  private readonly removing = new Map<string, Promise<void>>()

  /** Runs a start on `network`: after a removal under way, and holding removals off. */
  async whileStarting<T>(network: string, start: () => Promise<T>): Promise<T> {
    this.starting.set(network, (this.starting.get(network) ?? 0) + 1)
    try {
      await this.removing.get(network)
      return await start()
    } finally {
      const left = (this.starting.get(network) ?? 1) - 1
      if (left > 0) this.starting.set(network, left)
      else this.starting.delete(network)
    }
  }

  /** Runs `remove` unless a start on `network` is under way (then the network is still used). */
  async removeUnlessStarting(network: string, remove: () => Promise<void>): Promise<void> {
    if (this.starting.has(network) || this.removing.has(network)) return
    const removal = remove().finally(() => this.removing.delete(network))
    this.removing.set(network, removal)
    await removal
  }
}
