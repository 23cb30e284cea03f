import type { Pod } from './pod.js'
import type { PodRepo } from './ports.js'

const LIVE: Pod['status'][] = ['PROVISIONING', 'STARTING', 'RUNNING', 'EXITED', 'ERROR']

/**
 * The account's pods that are not TERMINATED and match, named for people
 * (`pod abc123 (my-pod)`): what keeps a template, registry or volume from being deleted.
 */
export async function podsUsing(
  pods: PodRepo,
  accountId: string,
  uses: (pod: Pod) => boolean,
): Promise<string[]> {
  return (await pods.list({ accountId, statuses: LIVE }))
    .filter(uses)
    .map((pod) => `pod ${pod.id} (${pod.name})`)
}

export const usesTemplate = (templateId: string) => (pod: Pod) => pod.templateId === templateId
export const usesRegistry = (registryId: string) => (pod: Pod) => pod.registry === registryId
export const usesNetworkVolume = (volumeId: string) => (pod: Pod) =>
  pod.mounts.network?.some((m) => m.volumeId === volumeId) ?? false
