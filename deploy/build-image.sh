#!/usr/bin/env bash
# Builds podyard's image from this checkout without a registry (Dockerfile): compiles the
# server, stages bin/, dist/ and the production part of node_modules (pruned from this
# checkout's, so nothing is downloaded), and runs docker build on that directory.
#   BASE_IMAGE  the image to build FROM (default node:20-bookworm-slim; podyard-base:bookworm
#               is made by deploy/base-image.sh from Debian's packages)
#   IMAGE       the tag (default podyard:<version>)
#   SKIP_BUILD=1  use dist/ as it is (already built from these sources, as npm install and the
#               test suite do) instead of running npm run build, which rewrites dist/ in place
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(node -p "require('./package.json').version")
image=${IMAGE:-podyard:$version}
base=${BASE_IMAGE:-node:20-bookworm-slim}
[ -d node_modules ] || { echo "run npm ci first" >&2; exit 1; }

[ "${SKIP_BUILD:-0}" = 1 ] || npm run build >/dev/null
[ -f dist/console/index.html ] || { echo "dist/ is not built: run npm run build" >&2; exit 1; }
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp package.json package-lock.json Dockerfile "$context/"
cp -r bin dist "$context/"
# -L: the checkout's node_modules may be a link (a worktree's); the image needs the files.
cp -rL node_modules "$context/node_modules"
(cd "$context" && npm prune --omit=dev --ignore-scripts --no-audit --no-fund >/dev/null)
docker build --quiet --build-arg "BASE_IMAGE=$base" -t "$image" "$context" >/dev/null
echo "$image"
