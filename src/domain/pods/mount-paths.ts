import { AppError } from '../../shared/app-error.js'
import type { PodMounts } from './pod.js'

/**
 * Directories no volume may be mounted on or under: the kernel's views of the container
 * (`/proc`, `/sys`) and its devices (`/dev`). A volume there hides what the runtime put in
 * place, and on the process driver it would shadow the sandbox's own mounts.
 */
export const RESERVED_MOUNT_DIRECTORIES = ['/proc', '/sys', '/dev'] as const
/** Longest mount path: Linux's PATH_MAX less its terminating NUL. */
export const MAX_MOUNT_PATH_LENGTH = 4095

/**
 * What is wrong with a mount path inside the container, or undefined when nothing is (docs/
 * pods.md, "Mount paths"): absolute and normalized (no `.` or `..` segment, no `//`, no
 * trailing `/`), not `/` itself, not on or under a RESERVED_MOUNT_DIRECTORIES, no control
 * characters. A path such as `/../..` or `/` gave a volume the container's whole root.
 */
export function mountPathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return 'must be an absolute path (start with /)'
  if (path.length > MAX_MOUNT_PATH_LENGTH) {
    return `must be at most ${MAX_MOUNT_PATH_LENGTH} characters`
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(path)) return 'must not contain control characters'
  if (path === '/') return 'must not be / (the root of the container)'
  const segments = path.slice(1).split('/')
  if (segments.some((segment) => segment === '')) {
    return 'must be a normalized path: no empty segment (// or a trailing /)'
  }
  if (segments.some((segment) => segment === '.' || segment === '..')) {
    return 'must be a normalized path: no . or .. segment'
  }
  const reserved = RESERVED_MOUNT_DIRECTORIES.find(
    (directory) => path === directory || path.startsWith(`${directory}/`),
  )
  if (reserved) return `must not be ${reserved} or a path under it`
  return undefined
}

/** `<field>: <problem>` for each mount path of `mounts` that is not valid, fields under `at`. */
export function mountPathProblems(mounts: PodMounts | undefined, at: string): string[] {
  const problems: string[] = []
  const check = (field: string, path: string | undefined) => {
    const problem = path === undefined ? undefined : mountPathProblem(path)
    if (problem) problems.push(`${at}.${field}: ${problem}`)
  }
  check('persistent.path', mounts?.persistent?.path)
  mounts?.network?.forEach((mount, i) => check(`network[${i}].path`, mount.path))
  return problems
}

/** 422 listing `mountPathProblems`, if any. */
export function checkMountPaths(mounts: PodMounts | undefined, at: string): void {
  const problems = mountPathProblems(mounts, at)
  if (problems.length === 0) return
  throw new AppError('VALIDATION_FAILED', `the request failed validation: ${problems.join('; ')}`, {
    errors: problems,
  })
}
