#!/usr/bin/env bash
# Builds the one artefact an operator copies to a machine (docs/production.md, "One directory
# to copy"): podyard-<version>-<platform>-<arch>/ with the compiled server, CLI and console
# (bin/, dist/), the production part of node_modules (pruned from this checkout's, so nothing
# is downloaded) with better-sqlite3's binding, the Node.js that binding was compiled for
# (runtime/node), and ./podyard, which runs the CLI with it. Then a .tar.gz of that directory.
#   OUT_DIR     where the directory and the .tar.gz go (default: the current directory)
#   NO_NODE=1   leave Node.js out: the target machine's own `node` runs it (the same major
#               version as this one's: the SQLite binding is built for its ABI)
#   NO_TARBALL=1  stage the directory only (deploy/build-image.sh builds the image from it)
#   SKIP_BUILD=1  use dist/ as it is instead of running npm run build
# Prints the directory's path, then the tarball's and both sizes on stderr.
set -euo pipefail
checkout="$(cd "$(dirname "$0")/.." && pwd)"
out_dir="$(mkdir -p "${OUT_DIR:-.}" && cd "${OUT_DIR:-.}" && pwd)"
cd "$checkout"
version=$(node -p "require('./package.json').version")
target=$(node -p "process.platform + '-' + process.arch")
name="podyard-$version-$target"
[ -d node_modules ] || { echo "run npm ci first" >&2; exit 1; }
[ "${SKIP_BUILD:-0}" = 1 ] || npm run build >/dev/null
[ -f dist/console/index.html ] || { echo "dist/ is not built: run npm run build" >&2; exit 1; }

root="$out_dir/$name"
rm -rf "$root"
mkdir -p "$root"
cp package.json package-lock.json LICENSE README.md "$root/"
cp -r bin "$root/"
# The build without what only development reads (source maps, build info).
(cd dist && find . -type f ! -name '*.map' ! -name '*.tsbuildinfo' -print0 |
  tar --null -T - -cf -) | (mkdir -p "$root/dist" && tar -xf - -C "$root/dist")
# -L: the checkout's node_modules may be a link (a worktree's); the artefact needs the files.
cp -rL node_modules "$root/node_modules"
(cd "$root" && npm prune --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
# What runs nothing: source maps and the SQLite binding's sources and build leftovers (its
# compiled binding, build/Release/better_sqlite3.node, is all it loads).
find "$root/node_modules" -type f -name '*.map' -delete
sqlite="$root/node_modules/better-sqlite3"
rm -rf "$sqlite/deps" "$sqlite/src"
find "$sqlite/build" -mindepth 1 -maxdepth 1 ! -name Release -exec rm -rf {} +
find "$sqlite/build/Release" -mindepth 1 ! -name better_sqlite3.node -exec rm -rf {} +
if [ "${NO_NODE:-0}" != 1 ]; then
  mkdir -p "$root/runtime"
  cp "$(node -p 'process.execPath')" "$root/runtime/node"
fi
cat >"$root/podyard" <<'LAUNCHER'
#!/bin/sh
# podyard from this directory, with the Node.js beside it (runtime/node) or else the PATH's.
here=$(dirname "$(readlink -f "$0")")
node="$here/runtime/node"
[ -x "$node" ] || node=node
exec "$node" "$here/bin/podyard.js" "$@"
LAUNCHER
chmod +x "$root/podyard"
echo "$root"
echo "$name/: $(du -sh "$root" | cut -f1)" >&2
if [ "${NO_TARBALL:-0}" != 1 ]; then
  tar -C "$out_dir" -czf "$out_dir/$name.tar.gz" "$name"
  echo "$out_dir/$name.tar.gz: $(du -h "$out_dir/$name.tar.gz" | cut -f1)" >&2
fi
