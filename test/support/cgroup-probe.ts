import { mkdtempSync, rmdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { probeCgroups, type CgroupSetup } from '../../src/runtime/process/cgroup-files.js'
import { groupDirs } from '../../src/runtime/process/cgroup-plan.js'

/**
 * Whether this machine gives workloads cgroups (the process driver's probe), tried in a
 * temporary state directory whose empty group of workloads is removed at once: it is no
 * platform's. A server starting meanwhile in another test file may have removed it first (it
 * removes every empty group of workloads it finds), which is not an error.
 */
export async function probeTestCgroups(): Promise<CgroupSetup> {
  const state = mkdtempSync(path.join(tmpdir(), 'podyard-cgroup-probe-'))
  try {
    const setup = await probeCgroups(state)
    if (setup.ok) {
      for (const group of groupDirs(setup.layout, state)) {
        try {
          rmdirSync(group)
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
        }
      }
    }
    return setup
  } finally {
    rmSync(state, { recursive: true, force: true })
  }
}
