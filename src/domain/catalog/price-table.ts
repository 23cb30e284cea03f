import { GPU_TYPES, type GpuPool } from './gpu-types.js'

/** USD per hour for one GPU. */
export interface GpuPrice {
  secure: number
  community: number
  /** Null when no serverless pool offers the type. */
  serverless: number | null
}

/** USD per vCPU-hour. */
export interface CpuPrice {
  securePerVcpu: number
  serverlessPerVcpu: number
}

/**
 * Serverless USD/hour per pool: the flex per-second prices of wire-compat §8.2 times 3600,
 * rounded; ADA_24 uses the catalog example's 1.1 and ADA_32_PRO, which the docs omit, sits
 * between ADA_24 and ADA_48_PRO.
 */
export const SERVERLESS_POOL_PRICES: Readonly<Record<GpuPool, number>> = {
  AMPERE_16: 0.58,
  AMPERE_24: 0.68,
  ADA_24: 1.1,
  ADA_32_PRO: 1.58,
  AMPERE_48: 1.22,
  ADA_48_PRO: 1.91,
  AMPERE_80: 2.74,
  ADA_80_PRO: 4.18,
  BLACKWELL_96: 4.0,
  HOPPER_141: 5.58,
  BLACKWELL_180: 8.64,
}

/**
 * Pod prices in USD/hour, [secure, community], near public market rates of early 2026. They
 * are defaults only: a fleet file overrides any of them.
 */
const POD_PRICES: Readonly<Record<string, readonly [number, number]>> = {
  'AMD Instinct MI300X OAM': [2.49, 1.99],
  'NVIDIA A100 80GB PCIe': [1.64, 1.19],
  'NVIDIA A100-SXM4-80GB': [1.74, 1.39],
  'NVIDIA A30': [0.39, 0.22],
  'NVIDIA A40': [0.4, 0.35],
  'NVIDIA B200': [5.99, 4.99],
  'NVIDIA B300 SXM6 AC': [7.99, 6.49],
  'NVIDIA GeForce RTX 3070': [0.16, 0.13],
  'NVIDIA GeForce RTX 3080': [0.19, 0.17],
  'NVIDIA GeForce RTX 3080 Ti': [0.21, 0.18],
  'NVIDIA GeForce RTX 3090': [0.46, 0.22],
  'NVIDIA GeForce RTX 3090 Ti': [0.48, 0.27],
  'NVIDIA GeForce RTX 4070 Ti': [0.21, 0.19],
  'NVIDIA GeForce RTX 4080': [0.31, 0.27],
  'NVIDIA GeForce RTX 4080 SUPER': [0.33, 0.28],
  'NVIDIA GeForce RTX 4090': [0.59, 0.34],
  'NVIDIA GeForce RTX 5080': [0.46, 0.35],
  'NVIDIA GeForce RTX 5090': [0.89, 0.69],
  'NVIDIA H100 80GB HBM3': [2.69, 1.99],
  'NVIDIA H100 NVL': [2.79, 2.59],
  'NVIDIA H100 PCIe': [2.39, 1.99],
  'NVIDIA H200': [3.59, 3.19],
  'NVIDIA H200 NVL': [3.39, 2.99],
  'NVIDIA L4': [0.43, 0.29],
  'NVIDIA L40': [0.99, 0.69],
  'NVIDIA L40S': [0.86, 0.79],
  'NVIDIA RTX 2000 Ada Generation': [0.24, 0.23],
  'NVIDIA RTX 4000 Ada Generation': [0.26, 0.2],
  'NVIDIA RTX 4000 SFF Ada Generation': [0.26, 0.2],
  'NVIDIA RTX 5000 Ada Generation': [0.77, 0.6],
  'NVIDIA RTX 6000 Ada Generation': [0.77, 0.74],
  'NVIDIA RTX A2000': [0.14, 0.12],
  'NVIDIA RTX A4000': [0.25, 0.17],
  'NVIDIA RTX A4500': [0.25, 0.19],
  'NVIDIA RTX A5000': [0.27, 0.16],
  'NVIDIA RTX A6000': [0.49, 0.33],
  'NVIDIA RTX PRO 4500 Blackwell': [0.64, 0.49],
  'NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition': [1.79, 1.49],
  'NVIDIA RTX PRO 6000 Blackwell Server Edition': [1.84, 1.59],
  'NVIDIA RTX PRO 6000 Blackwell Server Edition MIG 1g.24gb': [0.49, 0.39],
  'NVIDIA RTX PRO 6000 Blackwell Server Edition MIG 2g.48gb': [0.94, 0.79],
  'NVIDIA RTX PRO 6000 Blackwell Workstation Edition': [1.79, 1.59],
  'Tesla V100-PCIE-16GB': [0.29, 0.19],
  'Tesla V100-SXM2-16GB': [0.31, 0.21],
  'Tesla V100-SXM2-32GB': [0.39, 0.29],
}

function gpuPrices(): Record<string, GpuPrice> {
  const out: Record<string, GpuPrice> = {}
  for (const type of GPU_TYPES) {
    const pod = POD_PRICES[type.id]
    // A GPU type without a price would be listed at $0 and drain the fleet; fail at load.
    if (!pod) throw new Error(`price table has no entry for GPU type "${type.id}"`)
    out[type.id] = {
      secure: pod[0],
      community: pod[1],
      serverless: type.pool === null ? null : SERVERLESS_POOL_PRICES[type.pool],
    }
  }
  return out
}

/** Default price of every GPU type of the catalog, keyed by GPU type id. */
export const DEFAULT_GPU_PRICES: Readonly<Record<string, Readonly<GpuPrice>>> = gpuPrices()

/**
 * Per vCPU-hour by CPU flavor. cpu3c follows the v2 catalog example of wire-compat §8.3
 * (serverless below pods there too); more RAM per vCPU and the newer generation cost more.
 */
export const DEFAULT_CPU_PRICES: Readonly<Record<string, Readonly<CpuPrice>>> = {
  cpu3c: { securePerVcpu: 0.04, serverlessPerVcpu: 0.03 },
  cpu3g: { securePerVcpu: 0.05, serverlessPerVcpu: 0.04 },
  cpu3m: { securePerVcpu: 0.07, serverlessPerVcpu: 0.06 },
  cpu5c: { securePerVcpu: 0.05, serverlessPerVcpu: 0.04 },
  cpu5g: { securePerVcpu: 0.06, serverlessPerVcpu: 0.05 },
  cpu5m: { securePerVcpu: 0.08, serverlessPerVcpu: 0.07 },
}
