#!/usr/bin/env bash
# Runs the GPU suite (test/gpus/gpu.test.ts) on a machine with an NVIDIA GPU but without Node.js or
# network, from what test/support/gpu-device-prepare.sh put in .gpu-run/ (docs/gpus.md, "The GPU
# suite"). Run from the repository root with .gpu-run carried: bash .gpu-run/gpu-device-run.sh
# Writes under $OUT (else /tmp/podyard-gpu/out): the suite's log, and what nvidia-smi printed on
# this GPU (banner, -L, the sampler's query for three rounds, remapped rows), to be kept as
# recorded fixtures with the date and the machine.
set -uo pipefail
carried=${CARRIED:-.gpu-run}
work=/tmp/podyard-gpu
out=${OUT:-$work/out}
rm -rf "$work" && mkdir -p "$work" "$out"
tar -xJf "$carried/node.tar.xz" -C "$work" && tar -xJf "$carried/app.tar.xz" -C "$work" || exit 1
export PATH="$work/bin:$PATH"
cd "$work/app" || exit 1
fields=$(node -e "import('./dist/runtime/gpu/nvidia-smi-query.js').then((m) => console.log(m.GPU_QUERY_FIELDS.join(',')))")
remap=$(node -e "import('./dist/runtime/gpu/nvidia-health-sources.js').then((m) => console.log(m.REMAPPED_ROWS_FIELDS.join(',')))")
{
  date -u
  node --version
  nvidia-smi
  nvidia-smi -L
} >"$out/nvidia-smi.txt" 2>&1
timeout 3.5 nvidia-smi --query-gpu="$fields" --format=csv,noheader,nounits -lms 1000 >"$out/query-gpu-recorded.csv" 2>&1
nvidia-smi --query-remapped-rows="$remap" --format=csv,noheader,nounits >"$out/remapped-rows-recorded.csv" 2>&1
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())' >>"$out/nvidia-smi.txt" 2>&1
PODYARD_TEST_GPU=1 node node_modules/vitest/vitest.mjs run --config vitest.gpu.config.ts \
  --reporter=verbose 2>&1 | tee "$out/gpu-suite.log"
status=${PIPESTATUS[0]}
echo "gpu suite exit status: $status" | tee -a "$out/gpu-suite.log"
exit "$status"
