import { describe, expect, it } from 'vitest'
import {
  cgroupLimitsOf,
  chooseCgroupLayout,
  launchInCgroup,
  oomKillsIn,
  workloadCgroupPlan,
  workloadsGroupName,
} from './cgroup-plan.js'

/** This development machine's layout: v1 memory, pids and cpu; a unified hierarchy without controllers. */
const HYBRID_MOUNTINFO = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw`
const HYBRID_PROC = `9:name=systemd:/
8:pids:/
4:memory:/process_api/21ef
1:cpu:/
0::/`
/** A systemd host of cgroup v2 only, the server in its own service. */
const V2_MOUNTINFO = `30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot`
const V2_PROC = '0::/system.slice/podyard.service\n'

describe('chooseCgroupLayout', () => {
  it('takes cgroup v1 in a hybrid layout whose unified hierarchy has no controllers', () => {
    expect(chooseCgroupLayout(HYBRID_MOUNTINFO, HYBRID_PROC, '')).toEqual({
      ok: true,
      layout: {
        version: 1,
        ownDirs: {
          memory: '/sys/fs/cgroup/memory/process_api/21ef',
          pids: '/sys/fs/cgroup/pids',
          cpu: '/sys/fs/cgroup/cpu',
        },
      },
    })
  })

  it("takes cgroup v2 under the server's own cgroup where it has the three controllers", () => {
    expect(chooseCgroupLayout(V2_MOUNTINFO, V2_PROC, 'cpuset cpu io memory pids')).toEqual({
      ok: true,
      layout: { version: 2, ownDir: '/sys/fs/cgroup/system.slice/podyard.service', io: true },
    })
    // Without io, workloads' disk writes cannot be limited; the rest can.
    expect(chooseCgroupLayout(V2_MOUNTINFO, V2_PROC, 'cpu memory pids')).toEqual({
      ok: true,
      layout: { version: 2, ownDir: '/sys/fs/cgroup/system.slice/podyard.service' },
    })
  })

  it('says which controller is missing', () => {
    const choice = chooseCgroupLayout(V2_MOUNTINFO, V2_PROC, 'cpu io')
    expect(choice).toMatchObject({ ok: false })
    expect(!choice.ok && choice.reason).toMatch(/no memory, pids controller/)
  })

  it('resolves paths inside a cgroup namespace (the mount shows a subtree)', () => {
    const mountinfo = '41 31 0:38 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw'
    expect(chooseCgroupLayout(mountinfo, '0::/kubepods/pod1/app\n', 'memory pids cpu')).toEqual({
      ok: true,
      layout: { version: 2, ownDir: '/sys/fs/cgroup/app' },
    })
  })
})

describe('workloadCgroupPlan', () => {
  const limits = cgroupLimitsOf({ vcpus: 2, memoryGb: 1.5 })

  it('derives the limits from what was rented: memory in bytes, vCPUs as a quota, 512 processes per vCPU', () => {
    expect(limits).toEqual({ memoryBytes: 1610612736, cpuQuotaUs: 200_000, pids: 1024 })
    expect(cgroupLimitsOf({ vcpus: 0.5, memoryGb: 0 })).toEqual({
      memoryBytes: null,
      cpuQuotaUs: 50_000,
      pids: 512,
    })
  })

  it('writes cgroup v2 files in one directory under the workloads group', () => {
    const group = workloadsGroupName('/data/workloads')
    const plan = workloadCgroupPlan(
      { version: 2, ownDir: '/sys/fs/cgroup/s' },
      '/data/workloads',
      'w1',
      limits,
    )
    const dir = `/sys/fs/cgroup/s/${group}/w1`
    expect(plan).toEqual({
      version: 2,
      dirs: [dir],
      writes: [
        { file: `${dir}/memory.max`, value: '1610612736' },
        { file: `${dir}/memory.swap.max`, value: '0', optional: true },
        { file: `${dir}/pids.max`, value: '1024' },
        { file: `${dir}/cpu.max`, value: '200000 100000' },
      ],
      procsFiles: [`${dir}/cgroup.procs`],
      oomFile: `${dir}/memory.events`,
    })
  })

  it('writes cgroup v1 files in each controller hierarchy', () => {
    const group = workloadsGroupName('/d')
    const layout = {
      version: 1 as const,
      ownDirs: { memory: '/cg/memory/a', pids: '/cg/pids', cpu: '/cg/cpu' },
    }
    const plan = workloadCgroupPlan(layout, '/d', 'w2', limits)
    expect(plan.dirs).toEqual([
      `/cg/memory/a/${group}/w2`,
      `/cg/pids/${group}/w2`,
      `/cg/cpu/${group}/w2`,
    ])
    expect(plan.writes).toEqual([
      { file: `/cg/memory/a/${group}/w2/memory.limit_in_bytes`, value: '1610612736' },
      {
        file: `/cg/memory/a/${group}/w2/memory.memsw.limit_in_bytes`,
        value: '1610612736',
        optional: true,
      },
      { file: `/cg/pids/${group}/w2/pids.max`, value: '1024' },
      { file: `/cg/cpu/${group}/w2/cpu.cfs_period_us`, value: '100000' },
      { file: `/cg/cpu/${group}/w2/cpu.cfs_quota_us`, value: '200000' },
    ])
    expect(plan.oomFile).toBe(`/cg/memory/a/${group}/w2/memory.oom_control`)
    expect(workloadsGroupName('/d')).not.toBe(workloadsGroupName('/e'))
  })
})

describe('disk write limits in the cgroup plan', () => {
  const rule = { mibPerSecondPerVcpu: 64, iopsPerVcpu: 500 }
  const limits = cgroupLimitsOf({ vcpus: 2, memoryGb: 1 }, { majorMinor: '254:0', rule })

  it('limits writes per vCPU on the disk', () => {
    expect(limits.diskWrite).toEqual({
      majorMinor: '254:0',
      bytesPerSecond: 128 * 1024 * 1024,
      iops: 1000,
    })
  })

  it('writes io.max on cgroup v2, max for a rate of 0', () => {
    const dir = `/sys/fs/cgroup/s/${workloadsGroupName('/d')}/w3`
    const layout = { version: 2 as const, ownDir: '/sys/fs/cgroup/s', io: true as const }
    expect(workloadCgroupPlan(layout, '/d', 'w3', limits).writes.at(-1)).toEqual({
      file: `${dir}/io.max`,
      value: '254:0 wbps=134217728 wiops=1000',
    })
    const noIops = cgroupLimitsOf(
      { vcpus: 1, memoryGb: 1 },
      { majorMinor: '8:0', rule: { mibPerSecondPerVcpu: 1, iopsPerVcpu: 0 } },
    )
    expect(workloadCgroupPlan(layout, '/d', 'w3', noIops).writes.at(-1)?.value).toBe(
      '8:0 wbps=1048576 wiops=max',
    )
  })

  it('joins the blkio hierarchy on cgroup v1 and writes its throttles there', () => {
    const group = workloadsGroupName('/d')
    const layout = {
      version: 1 as const,
      ownDirs: { memory: '/cg/memory', pids: '/cg/pids', cpu: '/cg/cpu' },
      blkioDir: '/cg/blkio',
    }
    const plan = workloadCgroupPlan(layout, '/d', 'w4', limits)
    const blkio = `/cg/blkio/${group}/w4`
    expect(plan.dirs.at(-1)).toBe(blkio)
    expect(plan.procsFiles.at(-1)).toBe(`${blkio}/cgroup.procs`)
    expect(plan.writes.slice(-2)).toEqual([
      { file: `${blkio}/blkio.throttle.write_bps_device`, value: '254:0 134217728' },
      { file: `${blkio}/blkio.throttle.write_iops_device`, value: '254:0 1000' },
    ])
    // Without a rule, it is joined (so that it is found and removed) but nothing is written.
    const plain = workloadCgroupPlan(layout, '/d', 'w4', cgroupLimitsOf({ vcpus: 1, memoryGb: 1 }))
    expect(plain.dirs).toContain(blkio)
    expect(plain.writes.some((w) => w.file.includes('blkio'))).toBe(false)
  })
})

describe('oomKillsIn', () => {
  it('reads v1 memory.oom_control and v2 memory.events', () => {
    expect(oomKillsIn('oom_kill_disable 0\nunder_oom 0\noom_kill 2\n')).toBe(2)
    expect(oomKillsIn('low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\noom_group_kill 0\n')).toBe(1)
    expect(oomKillsIn('')).toBe(0)
  })
})

describe('launchInCgroup', () => {
  it('joins every hierarchy before it execs the command, paths quoted', () => {
    const launch = launchInCgroup({ file: '/usr/bin/bwrap', args: ['--x', "it's"], cwd: '/' }, [
      '/cg/a b/cgroup.procs',
      "/cg/it's/cgroup.procs",
    ])
    expect(launch).toEqual({
      file: '/bin/sh',
      args: [
        '-c',
        `echo $$ > '/cg/a b/cgroup.procs' && echo $$ > '/cg/it'\\''s/cgroup.procs' && exec "$@"`,
        'sh',
        '/usr/bin/bwrap',
        '--x',
        "it's",
      ],
      cwd: '/',
    })
  })
})
