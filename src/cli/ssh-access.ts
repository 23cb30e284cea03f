import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'

/** An SSH access that failed a check: the step, what is wrong, and how to fix it. */
export class SshAccessError extends Error {
  constructor(step: string, problem: string, fix: string) {
    super(`${step}: ${problem}\n  fix: ${fix}`)
    this.name = 'SshAccessError'
  }
}

export interface SshAccess {
  /** The engine's URL, ssh://user@host[:port]. */
  url: string
  user: string
  host: string
  /** The public key of the private key, as authorized_keys takes it. */
  publicKey: string
  /** The line to add to the user's authorized_keys on the host. */
  authorizedKeysLine: string
}

function sshKeygen(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const run = spawnSync('ssh-keygen', args, { encoding: 'utf8', timeout: 10_000 })
  if (run.error) {
    throw new SshAccessError(
      'checking the SSH access',
      `ssh-keygen did not run (${run.error.message})`,
      'install OpenSSH (Debian: apt-get install openssh-client)',
    )
  }
  return { code: run.status, stdout: run.stdout, stderr: run.stderr.trim() }
}

/**
 * Checks what podyard needs to reach a host's engine over SSH (docs/fleet.md, "Access over
 * SSH, checked"): the private key reads (no passphrase: podyard logs in unattended), and the
 * known_hosts file has the host's key (ssh2 alone would accept any). Gives the authorized_keys
 * line that lets that key do nothing but reach the engine.
 */
export function checkSshAccess(target: string, keyFile: string, knownHosts: string): SshAccess {
  const match = /^([^@\s]+)@([^@\s:]+|\[[^\]]+\])(?::(\d+))?$/.exec(target)
  if (!match) {
    throw new SshAccessError(
      'step 1, the address',
      `"${target}" is not user@host or user@host:port`,
      'name the user podyard logs in as and the machine, e.g. --ssh podyard@gpu-node-4',
    )
  }
  const [, user, host, port] = match as unknown as [string, string, string, string | undefined]
  if (!existsSync(keyFile)) {
    throw new SshAccessError(
      'step 2, the key',
      `${keyFile} does not exist`,
      `create it: ssh-keygen -t ed25519 -N '' -C podyard -f ${keyFile}`,
    )
  }
  // -P '': a key with a passphrase fails here, as it would for podyard.
  const key = sshKeygen(['-y', '-P', '', '-f', keyFile])
  if (key.code !== 0 || !key.stdout.trim()) {
    throw new SshAccessError(
      'step 2, the key',
      `${keyFile} is not a private key podyard can use (${key.stderr || 'no public key'})`,
      `podyard logs in unattended: use a key without a passphrase (ssh-keygen -p -N '' -f ${keyFile}) or create one: ssh-keygen -t ed25519 -N '' -C podyard -f <file>`,
    )
  }
  const publicKey = key.stdout.trim().split(/\s+/).slice(0, 2).join(' ')
  const bare = host.replace(/^\[|\]$/g, '')
  const name = port && port !== '22' ? `[${bare}]:${port}` : bare
  if (!existsSync(knownHosts)) {
    throw new SshAccessError(
      'step 3, the host key',
      `${knownHosts} does not exist`,
      `ssh-keyscan ${port ? `-p ${port} ` : ''}-t ed25519 ${bare} > ${knownHosts}, then compare it with the host's /etc/ssh/ssh_host_ed25519_key.pub through a channel you trust`,
    )
  }
  const found = sshKeygen(['-F', name, '-f', knownHosts])
  if (found.code !== 0 || !found.stdout.trim()) {
    throw new SshAccessError(
      'step 3, the host key',
      `${knownHosts} has no key for ${name}`,
      `ssh-keyscan ${port ? `-p ${port} ` : ''}-t ed25519 ${bare} >> ${knownHosts}, then compare it with the host's /etc/ssh/ssh_host_ed25519_key.pub through a channel you trust`,
    )
  }
  return {
    url: `ssh://${user}@${host}${port ? `:${port}` : ''}`,
    user,
    host: bare,
    publicKey,
    authorizedKeysLine: `command="docker system dial-stdio",restrict ${publicKey} podyard`,
  }
}
