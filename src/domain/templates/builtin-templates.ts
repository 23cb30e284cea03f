import type { Template } from './template.js'

/** Images of the built-in templates, which the process driver maps to stand-in commands. */
export const BUILTIN_IMAGES = {
  ubuntu: 'runpod/base:0.6.2-ubuntu22.04',
  pytorch: 'runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04',
} as const

const shipped = '2026-01-01T00:00:00.000Z'

/**
 * The templates the platform ships, readable by every account (`GET /v2/catalog/templates`).
 * Their ids are the ones RunPod's clients use (runpod-python's deployCpuPod defaults to
 * `runpod-ubuntu`).
 */
export const BUILTIN_TEMPLATES: readonly Template[] = [
  {
    id: 'runpod-ubuntu',
    accountId: null,
    name: 'Ubuntu 22.04 (CPU)',
    image: BUILTIN_IMAGES.ubuntu,
    args: '',
    disk: 20,
    env: {},
    ports: ['22/tcp'],
    registry: null,
    mounts: {},
    serverless: false,
    public: true,
    category: 'CPU',
    startSsh: true,
    startJupyter: false,
    allowedCudaVersions: [],
    createdAt: shipped,
  },
  {
    id: 'runpod-torch-v240',
    accountId: null,
    name: 'PyTorch 2.4.0 (GPU)',
    image: BUILTIN_IMAGES.pytorch,
    args: '',
    disk: 50,
    env: { JUPYTER_PASSWORD: '' },
    ports: ['8888/http', '22/tcp'],
    registry: null,
    mounts: { persistent: { size: 20, path: '/workspace' } },
    serverless: false,
    public: true,
    category: 'NVIDIA',
    startSsh: true,
    startJupyter: true,
    allowedCudaVersions: [],
    createdAt: shipped,
  },
]

export function findBuiltinTemplate(id: string): Template | undefined {
  return BUILTIN_TEMPLATES.find((t) => t.id === id)
}

/**
 * What the process driver runs for the built-in images, which it cannot pull: the Ubuntu image
 * idles; the PyTorch image serves a page on its 8888/http port, standing in for Jupyter (it is
 * not Jupyter, and says so). `node` is the Node.js binary running podyard.
 */
export function builtinImageCommands(node: string): Record<string, string> {
  const page =
    'require("http").createServer((q, r) => r.end("podyard stand-in for " + process.env.PODYARD_IMAGE + ' +
    '" on pod " + process.env.RUNPOD_POD_ID + ": the process driver does not run images; GPUs " + ' +
    '(process.env.CUDA_VISIBLE_DEVICES || "none") + "\\n")).listen(process.env.RUNPOD_TCP_PORT_8888 || 8888)'
  return {
    [BUILTIN_IMAGES.ubuntu]: 'exec sleep infinity',
    [BUILTIN_IMAGES.pytorch]: `PODYARD_IMAGE=${BUILTIN_IMAGES.pytorch} exec ${JSON.stringify(node)} -e '${page}'`,
  }
}
