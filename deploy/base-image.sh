#!/usr/bin/env bash
# A base image for deploy/build-image.sh made from Debian's packages, for machines that reach
# no image registry (CI): debootstrap's minimal Debian 12, plus this machine's node (Debian 12
# ships Node 18; podyard needs 20) and the libraries it links. Tagged podyard-base:bookworm;
# kept while it matches this node binary (REBUILD=1 makes it again). As root; needs debootstrap.
set -euo pipefail
tag=${BASE_TAG:-podyard-base:bookworm}
node_bin=$(readlink -f "$(command -v node)")
node_id=$(sha256sum "$node_bin" | cut -c1-16)
if [ "${REBUILD:-0}" != 1 ] &&
  [ "$(docker image inspect -f '{{index .Config.Labels "podyard.node"}}' "$tag" 2>/dev/null)" = "$node_id" ]; then
  echo "$tag"
  exit 0
fi
command -v debootstrap >/dev/null || { echo "debootstrap is not installed" >&2; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase bookworm "$root" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >/dev/null
cp "$node_bin" "$root/usr/bin/node"
for lib in $(ldd "$node_bin" | grep -o '/[^ ]*'); do
  [ -e "$root$lib" ] || { mkdir -p "$root$(dirname "$lib")" && cp -L "$lib" "$root$lib"; }
done
rm -rf "$root/var/cache/apt/archives"/*.deb "$root/var/lib/apt/lists"/*
tar -C "$root" -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "LABEL podyard.node=$node_id" - "$tag" >/dev/null
echo "$tag"
