#!/usr/bin/env bash
# Builds the conformance suite's Docker images locally (no registry is reachable from CI):
# a root filesystem with Debian's busybox-static (sh, sleep, cat, ...) and the host's node
# with the libraries it links, imported as podyard-conformance/plain:1 (no default command)
# and podyard-conformance/hello:1 (prints HELLO_IMAGE_LINE, then idles).
# The images also serve the docker driver's pod, network and pull tests (busybox's httpd,
# nslookup and nc). Idempotent: images already built for this node binary are kept (REBUILD=1
# forces a rebuild).
set -euo pipefail
node_id=$(sha256sum "$(readlink -f "$(command -v node)")" | cut -c1-16)
if [ "${REBUILD:-0}" != 1 ] &&
  [ "$(docker image inspect -f '{{index .Config.Labels "podyard.node"}}' podyard-conformance/plain:1 2>/dev/null)" = "$node_id" ] &&
  [ "$(docker image inspect -f '{{index .Config.Labels "podyard.node"}}' podyard-conformance/hello:1 2>/dev/null)" = "$node_id" ]; then
  echo "podyard-conformance/plain:1 and podyard-conformance/hello:1 are up to date"
  exit 0
fi
busybox=${BUSYBOX:-/bin/busybox}
[ -x "$busybox" ] || { echo "busybox-static is not installed" >&2; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/tmp" "$root/root" "$root/etc" "$root/usr/bin"
chmod 1777 "$root/tmp"
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
  [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
node=$(command -v node)
cp "$(readlink -f "$node")" "$root/usr/bin/node"
for lib in $(ldd "$(readlink -f "$node")" | grep -o '/[^ ]*'); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
tar -C "$root" -c . | docker import --change 'ENV PATH=/usr/bin:/bin' \
  --change "LABEL podyard.node=$node_id" - podyard-conformance/plain:1 >/dev/null
tar -C "$root" -c . | docker import \
  --change 'ENV PATH=/usr/bin:/bin' \
  --change "LABEL podyard.node=$node_id" \
  --change 'CMD ["/bin/sh", "-c", "echo '"'"'hello from the image'"'"'; exec sleep 2147483647"]' \
  - podyard-conformance/hello:1 >/dev/null
echo "built podyard-conformance/plain:1 and podyard-conformance/hello:1"
