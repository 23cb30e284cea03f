#!/usr/bin/env bash
# Builds podyard's image from this checkout without a registry (Dockerfile): stages the
# operator's artefact (deploy/build-artefact.sh: bin/, dist/ and the production part of
# node_modules, pruned from this checkout's, so nothing is downloaded) and runs docker build on
# that directory.
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

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The image is the operator's artefact (deploy/build-artefact.sh) without its Node.js: the base
# image has its own.
context=$(OUT_DIR="$work" NO_NODE=1 NO_TARBALL=1 bash deploy/build-artefact.sh)
cp Dockerfile "$context/"
docker build --quiet --build-arg "BASE_IMAGE=$base" -t "$image" "$context" >/dev/null
echo "$image"
