/**
 * Whether another machine can reach the job API at `url` (docs/serverless-workers.md, "Where
 * workers run"): a loopback or unspecified address names, on a remote host, that host itself.
 * Returns why it cannot, or null when it may (a name or address the host resolves or routes;
 * whether it really does is the operator's to make true).
 */
export function unreachableFromOtherHosts(url: string): string | null {
  let hostname: string
  try {
    hostname = new URL(url).hostname.toLowerCase()
  } catch {
    return 'not a URL'
  }
  const bare = hostname.replace(/^\[|\]$/g, '')
  if (bare === 'localhost' || bare.endsWith('.localhost')) return 'a loopback name'
  if (/^127\.\d+\.\d+\.\d+$/.test(bare) || bare === '::1' || bare === '::ffff:7f00:1')
    return 'a loopback address'
  if (bare === '0.0.0.0' || bare === '::') return 'the unspecified address'
  return null
}
