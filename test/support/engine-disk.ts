import { execFileSync } from 'node:child_process'

/** The disk under this machine's Docker engine's data root, as the machine's own tools name it. */
export function dataRootDisk(): string {
  const root = execFileSync('docker', ['info', '--format', '{{.DockerRootDir}}'], {
    encoding: 'utf8',
  }).trim()
  const source = execFileSync('df', ['--output=source', root], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .at(-1)!
  const parent = execFileSync('lsblk', ['-no', 'PKNAME', source], { encoding: 'utf8' }).trim()
  return parent ? `/dev/${parent}` : source
}

/** The HostConfig of the container of a workload (its podyard.workload label). */
export function hostConfigOf(workloadId: string): Record<string, unknown> {
  const name = execFileSync(
    'docker',
    ['ps', '-a', '--filter', `label=podyard.workload=${workloadId}`, '--format', '{{.Names}}'],
    { encoding: 'utf8' },
  ).trim()
  const [inspected] = JSON.parse(execFileSync('docker', ['inspect', name], { encoding: 'utf8' }))
  return inspected.HostConfig
}
