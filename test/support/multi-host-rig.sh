#!/usr/bin/env bash
# The multi-host rig: three Docker engines on this machine, each in its own network namespace,
# standing in for three GPU hosts. Run as root.
#
#   up      build the rig (idempotent), load the test images, check every transport
#   down    remove everything the rig made (idempotent)
#   status  each host's address and transports, and whether they answer
#   stop-engine N | start-engine N   kill host N's dockerd (a lost host) / start it again
#   cut N | heal N                   take host N's link off the rig bridge / put it back
#   tls-files DIR | tls-files rig    restart host 3's engine with the TLS files in DIR (ca.pem,
#                                    server-cert.pem, server-key.pem: what `podyard hosts add
#                                    --tls` writes) / with the rig's own again
#
# Layout (also written to /run/pyd-rig/rig.json for the tests, test/support/multi-host-rig.ts):
#   bridge pyd-rig0 10.213.0.1/24 in the root namespace; namespaces pyd-host1..3 at
#   10.213.0.11..13 (veth pyd-rig-hN <-> eth0), default route via 10.213.0.1. The host never
#   forwards what comes in on pyd-rig0 (a `prohibit` routing rule), so a namespace reaches this
#   machine's own addresses and the other namespaces (bridged) and nothing beyond.
#   Engine N: dockerd in pyd-hostN (and its own UTS namespace, host name gpu-node-N), config
#   /run/pyd-rig/hostN/daemon.json, socket /run/pyd-rig/hostN/docker.sock (group pyd-rig),
#   data /var/lib/pyd-rig/hostN, containers under the cgroup /pyd-rig-hostN, bridge 10.213.N.1/24,
#   address pool 10.213.(16*N).0/20, live-restore on; registries on the rig's network
#   (10.213.0.0/24, e.g. a test's on the bridge address) are pulled from over plain HTTP.
#   Hosts 1 and 2: sshd on 10.213.0.1N:22, key-only, user podyard-rig (group pyd-rig), whose
#   sessions get DOCKER_HOST=that namespace's socket. Client key, known_hosts and an ssh_config
#   in /run/pyd-rig/ssh; /run/pyd-rig/bin/ssh makes the docker CLI use them:
#     PATH=/run/pyd-rig/bin:$PATH DOCKER_HOST=ssh://podyard-rig@10.213.0.11 docker info
#   Host 3: dockerd also on tcp://10.213.0.13:2376 with TLS verify; CA and client cert in
#   /run/pyd-rig/tls ({ca,cert,key}.pem, so DOCKER_CERT_PATH works):
#     DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=/run/pyd-rig/tls DOCKER_HOST=tcp://10.213.0.13:2376 docker info
# Everything it makes is named pyd-rig*/pyd-host*/podyard-rig; `down` removes exactly that.
# The machine's default Docker engine is never touched.
set -euo pipefail
export PATH=/usr/local/sbin:/usr/sbin:/sbin:$PATH
unset DOCKER_HOST DOCKER_CONTEXT DOCKER_TLS_VERIFY DOCKER_CERT_PATH

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RUN=/run/pyd-rig
DATA=/var/lib/pyd-rig
BRIDGE=pyd-rig0
NET=10.213.0
RIG_USER=podyard-rig
RIG_GROUP=pyd-rig
RIG_USER_COMMENT='podyard multi-host rig (test/support/multi-host-rig.sh)'
RULE_PREF=1213
HOSTS=(1 2 3)
SSH_HOSTS=(1 2)
TLS_HOST=3
TLS_PORT=2376

die() {
  echo "multi-host-rig: $*" >&2
  exit 1
}
say() { echo "multi-host-rig: $*"; }

ns() { echo "pyd-host$1"; }
addr() { echo "$NET.1$1"; }
host_name() { echo "gpu-node-$1"; }
sock() { echo "$RUN/host$1/docker.sock"; }
engine() { docker -H "unix://$(sock "$1")" "${@:2}"; }

is_ssh_host() { [[ " ${SSH_HOSTS[*]} " == *" $1 "* ]]; }

# The pid in a pidfile ($1) if that process runs, is named $2 and sits in host $3's network
# namespace: a stale pidfile whose pid now names someone else's process gives nothing.
live_pid() {
  local pid
  [ -s "$1" ] || return 1
  pid=$(cat "$1")
  [[ "$pid" =~ ^[0-9]+$ ]] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] || return 1
  [ -e "/run/netns/$(ns "$3")" ] &&
    [ "$(readlink "/proc/$pid/ns/net")" = "net:[$(stat -L -c %i "/run/netns/$(ns "$3")")]" ] || return 1
  echo "$pid"
}

# Moves $1 onto $2 when they differ (or $2 is missing); true when it did.
replace_if_changed() {
  if [ -e "$2" ] && cmp -s "$1" "$2"; then
    rm -f "$1"
    return 1
  fi
  mv "$1" "$2"
}

# TERM to the process of a pidfile (as live_pid), and wait (KILL after 30 s).
stop_pid_file() {
  local pid
  pid=$(live_pid "$@") || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 150); do
    [ -d "/proc/$pid" ] || return 0
    sleep 0.2
  done
  kill -KILL "$pid" 2>/dev/null || true
}

engine_answers() { timeout 10 docker -H "unix://$(sock "$1")" version --format '{{.Server.Version}}' >/dev/null 2>&1; }

ssh_answers() {
  PATH="$RUN/bin:$PATH" DOCKER_HOST="ssh://$RIG_USER@$(addr "$1")" \
    timeout 20 docker version --format '{{.Server.Version}}' >/dev/null 2>&1
}

tls_answers() {
  DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH="$RUN/tls" DOCKER_HOST="tcp://$(addr "$1"):$TLS_PORT" \
    timeout 20 docker version --format '{{.Server.Version}}' >/dev/null 2>&1
}

# ---------------------------------------------------------------------------------------------
# up

install_packages() {
  local missing=()
  { command -v dockerd && command -v docker; } >/dev/null || missing+=(docker.io)
  [ -x /usr/sbin/sshd ] || missing+=(openssh-server)
  command -v ssh >/dev/null || missing+=(openssh-client)
  [ -x /bin/busybox ] || missing+=(busybox-static)
  command -v ip >/dev/null || missing+=(iproute2)
  command -v openssl >/dev/null || missing+=(openssl)
  command -v nsenter >/dev/null || missing+=(util-linux)
  [ "${#missing[@]}" -gt 0 ] || return 0
  say "installing ${missing[*]}"
  # Installing must not start the machine's own sshd or dockerd: policy-rc.d says no to that.
  local policy_made=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    policy_made=1
  fi
  local status=0
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; } ||
    status=$?
  [ "$policy_made" = 0 ] || rm -f /usr/sbin/policy-rc.d
  [ "$status" = 0 ] || die "could not install ${missing[*]}"
}

make_account() {
  getent group "$RIG_GROUP" >/dev/null || groupadd --system "$RIG_GROUP"
  if ! getent passwd "$RIG_USER" >/dev/null; then
    useradd --system --gid "$RIG_GROUP" --home-dir "$RUN/home" --no-create-home \
      --shell /bin/sh --comment "$RIG_USER_COMMENT" "$RIG_USER"
    # '*': no password can match, but the account is not locked ('!'), which sshd without PAM
    # would refuse even for a key.
    usermod -p '*' "$RIG_USER"
  fi
  mkdir -p "$RUN/home"
  chown "$RIG_USER:$RIG_GROUP" "$RUN/home"
}

make_network() {
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge
  fi
  # No IPv6 on the rig: no router solicitations, nothing to route.
  sysctl -qw "net.ipv6.conf.$BRIDGE.disable_ipv6=1"
  ip addr show dev "$BRIDGE" | grep -q "inet $NET.1/24" || ip addr add "$NET.1/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  # Whatever a namespace sends beyond this machine's own addresses is refused here (local
  # delivery is decided before this rule, forwarding after it).
  ip rule show pref "$RULE_PREF" | grep -q . || ip rule add pref "$RULE_PREF" iif "$BRIDGE" prohibit
  # `ip netns add` makes /run/netns (a mount of its own) when it is missing: note that we did.
  [ -d /run/netns ] || touch "$RUN/made-run-netns"
  local n
  for n in "${HOSTS[@]}"; do
    local name veth
    name=$(ns "$n")
    veth="pyd-rig-h$n"
    [ -e "/run/netns/$name" ] || ip netns add "$name"
    if ! ip link show "$veth" >/dev/null 2>&1; then
      ip link add "$veth" type veth peer name eth0 netns "$name"
    fi
    sysctl -qw "net.ipv6.conf.$veth.disable_ipv6=1"
    ip link set "$veth" master "$BRIDGE" up
    ip -n "$name" link set lo up
    nsenter --net="/run/netns/$name" sysctl -qw net.ipv6.conf.eth0.disable_ipv6=1
    ip -n "$name" addr show dev eth0 | grep -q "inet $(addr "$n")/24" ||
      ip -n "$name" addr add "$(addr "$n")/24" dev eth0
    ip -n "$name" link set eth0 up
    ip -n "$name" route replace default via "$NET.1"
  done
}

make_ssh_keys() {
  local dir=$RUN/ssh
  mkdir -p "$dir" "$RUN/bin"
  chmod 755 "$RUN" "$dir"
  [ -s "$dir/id_ed25519" ] ||
    ssh-keygen -q -t ed25519 -N '' -C "$RIG_USER@pyd-rig" -f "$dir/id_ed25519"
  # restrict: no forwarding, no pty; commands (docker system dial-stdio) still run.
  echo "restrict $(cat "$dir/id_ed25519.pub")" >"$dir/authorized_keys"
  chmod 644 "$dir/authorized_keys"
  : >"$dir/known_hosts.new"
  local n
  for n in "${SSH_HOSTS[@]}"; do
    local keydir=$RUN/host$n/sshd
    mkdir -p "$keydir"
    [ -s "$keydir/ssh_host_ed25519_key" ] ||
      ssh-keygen -q -t ed25519 -N '' -C "$(host_name "$n")" -f "$keydir/ssh_host_ed25519_key"
    echo "$(addr "$n") $(cut -d' ' -f1,2 "$keydir/ssh_host_ed25519_key.pub")" >>"$dir/known_hosts.new"
    cat >"$keydir/sshd_config.new" <<EOF
ListenAddress $(addr "$n"):22
HostKey $keydir/ssh_host_ed25519_key
PidFile $keydir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
AllowUsers $RIG_USER
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
UsePAM no
AllowTcpForwarding no
AllowAgentForwarding no
X11Forwarding no
PrintMotd no
# docker's ssh transport runs \`docker system dial-stdio\` here: point it at this host's engine.
SetEnv DOCKER_HOST=unix://$(sock "$n")
EOF
    # A changed configuration (a newer version of this script) takes a restart.
    if replace_if_changed "$keydir/sshd_config.new" "$keydir/sshd_config"; then
      stop_pid_file "$keydir/sshd.pid" sshd "$n"
    fi
  done
  mv "$dir/known_hosts.new" "$dir/known_hosts"
  cat >"$dir/ssh_config" <<EOF
Host $NET.*
  User $RIG_USER
  IdentityFile $dir/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile $dir/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  ControlMaster no
  ControlPath none
EOF
  printf '#!/bin/sh\n# ssh with the rig'"'"'s key and known_hosts (for the docker CLI'"'"'s ssh:// transport).\nexec /usr/bin/ssh -F %s "$@"\n' \
    "$dir/ssh_config" >"$RUN/bin/ssh"
  chmod 755 "$RUN/bin/ssh"
}

make_tls() {
  local dir=$RUN/tls n=$TLS_HOST
  mkdir -p "$dir/ca" "$dir/server"
  chmod 700 "$dir/ca" "$dir/server"
  [ -s "$dir/ca.pem" ] && [ -s "$dir/cert.pem" ] && [ -s "$dir/server/cert.pem" ] && return 0
  local ec=(-algorithm EC -pkeyopt ec_paramgen_curve:P-256)
  openssl genpkey "${ec[@]}" -out "$dir/ca/ca-key.pem" 2>/dev/null
  openssl req -x509 -new -key "$dir/ca/ca-key.pem" -days 365 -subj '/CN=podyard multi-host rig CA' \
    -addext 'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,keyCertSign,cRLSign' \
    -out "$dir/ca.pem" 2>/dev/null
  sign() { # key, subject, extensions, certificate
    openssl genpkey "${ec[@]}" -out "$1" 2>/dev/null
    openssl req -new -key "$1" -subj "$2" 2>/dev/null |
      openssl x509 -req -CA "$dir/ca.pem" -CAkey "$dir/ca/ca-key.pem" -days 365 \
        -set_serial "0x$(openssl rand -hex 12)" -extfile <(printf '%s\n' "$3") -out "$4" 2>/dev/null
  }
  sign "$dir/server/key.pem" "/CN=$(host_name "$n")" \
    "$(printf 'subjectAltName=IP:%s,DNS:%s\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature' \
      "$(addr "$n")" "$(host_name "$n")")" "$dir/server/cert.pem"
  sign "$dir/key.pem" '/CN=podyard-rig-client' \
    "$(printf 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature')" "$dir/cert.pem"
  chmod 600 "$dir/key.pem"
  openssl verify -CAfile "$dir/ca.pem" "$dir/server/cert.pem" "$dir/cert.pem" >/dev/null ||
    die "the rig's TLS certificates do not verify"
}

write_daemon_config() {
  local n=$1 hosts tls=''
  hosts="\"unix://$(sock "$n")\""
  if [ "$n" = "$TLS_HOST" ]; then
    hosts="$hosts, \"tcp://$(addr "$n"):$TLS_PORT\""
    local issued=$RUN/host$n/issued-tls
    if [ -d "$issued" ]; then
      tls=$(printf ',\n  "tlsverify": true,\n  "tlscacert": "%s",\n  "tlscert": "%s",\n  "tlskey": "%s"' \
        "$issued/ca.pem" "$issued/server-cert.pem" "$issued/server-key.pem")
    else
      tls=$(printf ',\n  "tlsverify": true,\n  "tlscacert": "%s",\n  "tlscert": "%s",\n  "tlskey": "%s"' \
        "$RUN/tls/ca.pem" "$RUN/tls/server/cert.pem" "$RUN/tls/server/key.pem")
    fi
  fi
  # deprecated-key-path: dockerd 20.10 derives its engine ID from this key (by default
  # /etc/docker/key.json, the default engine's): each rig engine gets its own ID.
  cat >"$RUN/host$n/daemon.json.new" <<EOF
{
  "hosts": [$hosts],
  "group": "$RIG_GROUP",
  "data-root": "$DATA/host$n",
  "exec-root": "$RUN/host$n/exec",
  "pidfile": "$RUN/host$n/dockerd.pid",
  "deprecated-key-path": "$DATA/host$n/key.json",
  "bip": "10.213.$n.1/24",
  "default-address-pools": [{ "base": "10.213.$((16 * n)).0/20", "size": 24 }],
  "cgroup-parent": "/pyd-rig-host$n",
  "insecure-registries": ["$NET.0/24"],
  "live-restore": true$tls
}
EOF
  # A changed configuration takes a restart; live-restore keeps the containers running.
  if replace_if_changed "$RUN/host$n/daemon.json.new" "$RUN/host$n/daemon.json"; then
    stop_pid_file "$RUN/host$n/dockerd.pid" dockerd "$n"
  fi
}

# Starts host N's dockerd unless it runs; same command every time (up and start-engine).
start_engine() {
  local n=$1 dir=$RUN/host$1
  [ -s "$dir/daemon.json" ] || die "host $n has no daemon.json: run \`$0 up\` first"
  if ! live_pid "$dir/dockerd.pid" dockerd "$n" >/dev/null; then
    mkdir -p "$DATA/host$n"
    # nsenter, not `ip netns exec`: that remounts /sys and dockerd then finds no cgroups.
    setsid -f nsenter --net="/run/netns/$(ns "$n")" unshare --uts \
      sh -c 'hostname "$1" && exec dockerd --config-file "$2"' sh "$(host_name "$n")" "$dir/daemon.json" \
      </dev/null >>"$dir/dockerd.log" 2>&1
  fi
}

# Whether host N's dockerd answers within 60 s; false at once when it gave up (it writes its
# pidfile early, so a dead one is seen after 2 s).
engine_ready() {
  local n=$1 i
  for i in $(seq 1 300); do
    engine_answers "$n" && return 0
    [ "$i" -lt 10 ] || live_pid "$RUN/host$n/dockerd.pid" dockerd "$n" >/dev/null || return 1
    sleep 0.2
  done
  return 1
}

wait_engine() {
  engine_ready "$1" && return 0
  tail -20 "$RUN/host$1/dockerd.log" >&2 || true
  die "host $1's dockerd does not answer on $(sock "$1") (log: $RUN/host$1/dockerd.log)"
}

start_sshd() {
  local n=$1 dir=$RUN/host$1/sshd
  live_pid "$dir/sshd.pid" sshd "$n" >/dev/null && return 0
  [ -d /run/sshd ] || { mkdir -p /run/sshd && touch "$RUN/made-run-sshd"; }
  /usr/sbin/sshd -t -f "$dir/sshd_config" || die "host $n's sshd_config is refused"
  nsenter --net="/run/netns/$(ns "$n")" /usr/sbin/sshd -f "$dir/sshd_config" -E "$dir/sshd.log"
  for _ in $(seq 1 50); do
    live_pid "$dir/sshd.pid" sshd "$n" >/dev/null && return 0
    sleep 0.1
  done
  die "host $n's sshd did not start (log: $dir/sshd.log)"
}

# The repo's test images, built once (docker-test-images.sh) into the first engine and copied
# into the others: faster than building three times, and every engine has the same image IDs.
load_images() {
  local first=${HOSTS[0]} images=(podyard-conformance/plain:1 podyard-conformance/hello:1) want n
  DOCKER_HOST="unix://$(sock "$first")" bash "$REPO/test/support/docker-test-images.sh" >/dev/null ||
    die "could not build the test images in host $first's engine"
  want=$(engine "$first" image inspect -f '{{.Id}}' "${images[@]}")
  local copies=()
  for n in "${HOSTS[@]:1}"; do
    [ "$(engine "$n" image inspect -f '{{.Id}}' "${images[@]}" 2>/dev/null)" != "$want" ] || continue
    { engine "$first" save "${images[@]}" | engine "$n" load -q >/dev/null; } &
    copies+=("$!:$n")
  done
  local copy
  for copy in "${copies[@]}"; do
    wait "${copy%%:*}" || die "could not copy the test images into host ${copy#*:}'s engine"
  done
}

write_layout() {
  local dir=$RUN/ssh hosts='' n
  for n in "${HOSTS[@]}"; do
    local url transport extra=''
    if is_ssh_host "$n"; then
      transport=ssh url="ssh://$RIG_USER@$(addr "$n")"
      extra=$(printf ',\n      "sshHostKey": "%s"' "$(cut -d' ' -f1,2 "$RUN/host$n/sshd/ssh_host_ed25519_key.pub")")
    else
      transport=tls url="tcp://$(addr "$n"):$TLS_PORT"
    fi
    [ -z "$hosts" ] || hosts="$hosts,"
    hosts="$hosts
    {
      \"name\": \"$(host_name "$n")\",
      \"index\": $n,
      \"namespace\": \"$(ns "$n")\",
      \"address\": \"$(addr "$n")\",
      \"transport\": \"$transport\",
      \"dockerUrl\": \"$url\",
      \"socketPath\": \"$(sock "$n")\",
      \"pidFile\": \"$RUN/host$n/dockerd.pid\"$extra
    }"
  done
  cat >"$RUN/rig.json.new" <<EOF
{
  "version": 1,
  "script": "$REPO/test/support/multi-host-rig.sh",
  "bridge": { "name": "$BRIDGE", "address": "$NET.1", "cidr": "$NET.0/24" },
  "ssh": {
    "user": "$RIG_USER",
    "privateKeyFile": "$dir/id_ed25519",
    "knownHostsFile": "$dir/known_hosts",
    "configFile": "$dir/ssh_config",
    "binDir": "$RUN/bin"
  },
  "tls": {
    "dir": "$RUN/tls",
    "caFile": "$RUN/tls/ca.pem",
    "certFile": "$RUN/tls/cert.pem",
    "keyFile": "$RUN/tls/key.pem"
  },
  "hosts": [$hosts
  ]
}
EOF
  mv "$RUN/rig.json.new" "$RUN/rig.json"
}

# Every transport answers, and nothing leaves the rig.
check() {
  local n failed=0
  for n in "${HOSTS[@]}"; do
    engine_answers "$n" || { echo "host $n: engine does not answer on $(sock "$n")" >&2 && failed=1; }
    if is_ssh_host "$n"; then
      ssh_answers "$n" || { echo "host $n: no answer over ssh://$RIG_USER@$(addr "$n")" >&2 && failed=1; }
    fi
    if [ "$n" = "$TLS_HOST" ]; then
      tls_answers "$n" || { echo "host $n: no answer over tcp://$(addr "$n"):$TLS_PORT (TLS)" >&2 && failed=1; }
    fi
  done
  if ip route get 192.0.2.1 from "$NET.11" iif "$BRIDGE" >/dev/null 2>&1; then
    echo "the host would forward the rig's packets beyond the machine" >&2
    failed=1
  fi
  [ "$failed" = 0 ] || die "the rig is not working (see above)"
}

up() {
  [ "$(id -u)" = 0 ] || die "run as root"
  local started=$SECONDS n
  install_packages
  mkdir -p "$RUN" "$DATA"
  chmod 755 "$RUN"
  make_account
  make_network
  make_ssh_keys
  make_tls
  # The rig's own TLS files, whatever a test left (tls-files).
  rm -rf "$RUN/host$TLS_HOST/issued-tls"
  for n in "${HOSTS[@]}"; do
    mkdir -p "$RUN/host$n"
    write_daemon_config "$n"
    start_engine "$n"
  done
  for n in "${HOSTS[@]}"; do wait_engine "$n"; done
  for n in "${SSH_HOSTS[@]}"; do start_sshd "$n"; done
  load_images
  write_layout
  check
  say "up in $((SECONDS - started)) s: $(for n in "${HOSTS[@]}"; do printf '%s ' "$(host_name "$n")=$(addr "$n")"; done)(layout: $RUN/rig.json)"
}

# ---------------------------------------------------------------------------------------------
# down

# Processes in a network namespace of ours are ours (dockerd, containerd, shims, sshd, proxies).
kill_namespace() {
  local name=$1 pids
  [ -e "/run/netns/$name" ] || return 0
  pids=$(ip netns pids "$name" 2>/dev/null || true)
  [ -n "$pids" ] || return 0
  # shellcheck disable=SC2086
  kill -TERM $pids 2>/dev/null || true
  for _ in $(seq 1 50); do
    pids=$(ip netns pids "$name" 2>/dev/null || true)
    [ -n "$pids" ] || return 0
    sleep 0.1
  done
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null || true
}

# Container processes left by an engine that could not remove them live in its cgroup.
kill_cgroups() {
  local n=$1 dir
  for dir in $(find /sys/fs/cgroup -maxdepth 2 -type d -name "pyd-rig-host$n" 2>/dev/null); do
    find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
  done
  sleep 0.2
  for dir in $(find /sys/fs/cgroup -maxdepth 2 -type d -name "pyd-rig-host$n" 2>/dev/null); do
    find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
}

stop_engine_gracefully() {
  local n=$1
  if engine_answers "$n"; then
    local ids
    ids=$(engine "$n" ps -aq)
    # shellcheck disable=SC2086
    [ -z "$ids" ] || engine "$n" rm -f -v $ids >/dev/null 2>&1 || true
  fi
  stop_pid_file "$RUN/host$n/dockerd.pid" dockerd "$n"
}

unmount_under() {
  local target
  { findmnt -rn -o TARGET | grep -E "^($1)(/|$)" || true; } | sort -r | while read -r target; do
    umount -l "$target" 2>/dev/null || true
  done
}

down() {
  [ "$(id -u)" = 0 ] || die "run as root"
  local n
  for n in "${HOSTS[@]}"; do
    [ -e "$RUN/host$n" ] || continue
    stop_engine_gracefully "$n"
  done
  for n in "${HOSTS[@]}"; do
    kill_namespace "$(ns "$n")"
    kill_cgroups "$n"
  done
  unmount_under "$RUN|$DATA"
  for n in "${HOSTS[@]}"; do
    [ ! -e "/run/netns/$(ns "$n")" ] || ip netns del "$(ns "$n")"
    ! ip link show "pyd-rig-h$n" >/dev/null 2>&1 || ip link del "pyd-rig-h$n"
  done
  ! ip link show "$BRIDGE" >/dev/null 2>&1 || ip link del "$BRIDGE"
  if [ -e "$RUN/made-run-netns" ] && [ -d /run/netns ] && [ -z "$(ls -A /run/netns)" ]; then
    umount /run/netns 2>/dev/null || true
    rmdir /run/netns 2>/dev/null || true
  fi
  while ip rule show pref "$RULE_PREF" | grep -q .; do ip rule del pref "$RULE_PREF"; done
  if [ "$(getent passwd "$RIG_USER" | cut -d: -f5)" = "$RIG_USER_COMMENT" ]; then userdel "$RIG_USER"; fi
  if getent group "$RIG_GROUP" >/dev/null && [ -z "$(getent group "$RIG_GROUP" | cut -d: -f4)" ]; then
    groupdel "$RIG_GROUP"
  fi
  # /run/sshd is sshd's privilege-separation directory; we made it only if it was missing.
  if [ -e "$RUN/made-run-sshd" ] && ! ps -C sshd -o stat= | grep -qv '^Z'; then rmdir /run/sshd 2>/dev/null || true; fi
  rm -rf --one-file-system "$RUN" "$DATA"
  say "down"
}

# ---------------------------------------------------------------------------------------------
# status, stop-engine, start-engine, cut, heal

status() {
  if [ ! -s "$RUN/rig.json" ]; then
    echo "multi-host rig: down (no $RUN/rig.json)"
    return 1
  fi
  local n all=0
  echo "multi-host rig: bridge $BRIDGE $NET.1/24, layout $RUN/rig.json"
  for n in "${HOSTS[@]}"; do
    local line
    line="$(host_name "$n")  $(addr "$n")  unix://$(sock "$n"): "
    if engine_answers "$n"; then line+="answers"; else line+="no answer" all=1; fi
    if is_ssh_host "$n"; then
      line+="  ssh://$RIG_USER@$(addr "$n"): "
      if ssh_answers "$n"; then line+="answers"; else line+="no answer" all=1; fi
    fi
    if [ "$n" = "$TLS_HOST" ]; then
      line+="  tcp://$(addr "$n"):$TLS_PORT (TLS): "
      if tls_answers "$n"; then line+="answers"; else line+="no answer" all=1; fi
    fi
    if ! ip link show "pyd-rig-h$n" 2>/dev/null | grep -q 'state UP'; then line+="  (link cut)"; fi
    echo "$line"
  done
  return "$all"
}

host_arg() {
  [[ " ${HOSTS[*]} " == *" ${1:-} "* ]] || die "which host? one of ${HOSTS[*]}"
  [ -s "$RUN/rig.json" ] || die "the rig is down: run \`$0 up\` first"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  stop-engine)
    host_arg "${2:-}"
    # A lost host: no clean shutdown. Its containers keep running (live-restore) under containerd.
    if pid=$(live_pid "$RUN/host$2/dockerd.pid" dockerd "$2"); then
      kill -KILL "$pid"
      for _ in $(seq 1 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    fi
    ;;
  start-engine)
    host_arg "${2:-}"
    # A dockerd started beside the containerd its killed predecessor left running (live-restore)
    # may give up waiting for it on a busy machine ("timeout waiting for containerd to start"):
    # it is started again, up to three times.
    for attempt in 1 2 3; do
      start_engine "$2"
      engine_ready "$2" && break
      [ "$attempt" -lt 3 ] || wait_engine "$2"
    done
    ;;
  cut)
    host_arg "${2:-}"
    ip link set "pyd-rig-h$2" down
    ;;
  heal)
    host_arg "${2:-}"
    ip link set "pyd-rig-h$2" up
    ;;
  tls-files)
    [ -n "${2:-}" ] || die "tls-files DIR (ca.pem, server-cert.pem, server-key.pem) or tls-files rig"
    [ -s "$RUN/rig.json" ] || die "the rig is down: run \`$0 up\` first"
    issued=$RUN/host$TLS_HOST/issued-tls
    rm -rf "$issued"
    if [ "$2" != rig ]; then
      mkdir -m 700 "$issued"
      for f in ca.pem server-cert.pem server-key.pem; do
        [ -s "$2/$f" ] || die "$2/$f is missing"
        cp "$2/$f" "$issued/$f"
      done
    fi
    # A changed daemon.json stops the engine (live-restore keeps its containers); start it again.
    write_daemon_config "$TLS_HOST"
    start_engine "$TLS_HOST"
    wait_engine "$TLS_HOST"
    ;;
  *)
    echo "usage: $0 up|down|status|stop-engine N|start-engine N|cut N|heal N|tls-files DIR|rig" >&2
    exit 2
    ;;
esac
