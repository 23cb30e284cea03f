#!/usr/bin/env bash
# Runs a command from the repository root inside a virtual machine whose kernel mounts only
# cgroup v2, every controller on the unified hierarchy: the process driver's cgroup v2 path
# (src/runtime/process/cgroup-files.ts) runs there for real, where this machine's hybrid layout
# binds memory, pids and cpu to cgroup v1. docs/development.md, "cgroup v2 in a VM".
#
#   bash test/support/cgroup-v2-vm.sh [--out DIR] npx vitest run test/containment/containment-process.test.ts
#
# --out DIR: this machine's directory DIR is writable at the same path in the VM (for a report
# the command writes); everything else the command writes stays in the VM.
#
# The VM (QEMU) boots the newest Debian kernel in /boot with an initramfs made here from
# busybox-static and that kernel's modules, and uses this machine's own root filesystem over 9p,
# read-only under a writable layer in the VM's memory: the same Node.js, checkout and
# node_modules. It has 2 CPUs, 8 GiB, loopback and a user-mode network card (a host's network,
# with a default route; nothing beyond this machine answers), and a 4 GiB ext4 disk of its own as
# TMPDIR (write limits need a block device). The command runs in a cgroup below the root, as a
# systemd service with Delegate=yes does. Emulated (TCG): nested KVM here accepts a VM and
# then never runs its kernel; PODYARD_VM_ACCEL=kvm tries it where it works. The command's
# output comes back on this terminal; its exit status is this script's, and the VM is stopped
# after PODYARD_VM_TIMEOUT_S seconds (1200 by default). Run as root.
# Needs qemu-system-x86, linux-image-amd64 and busybox-static (.ci/run installs them).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
out=''
if [ "${1:-}" = --out ]; then
  out=$(realpath "$2")
  shift 2
fi
[ "$#" -gt 0 ] || { echo "usage: $0 [--out DIR] <command...>" >&2; exit 2; }

kernel=$(ls /boot/vmlinuz-* 2>/dev/null | sort -V | tail -1 || true)
[ -n "$kernel" ] || { echo "no kernel in /boot: apt-get install linux-image-amd64" >&2; exit 2; }
version=${kernel#/boot/vmlinuz-}
[ -d "/lib/modules/$version" ] || { echo "no /lib/modules/$version for $kernel" >&2; exit 2; }
command -v qemu-system-x86_64 >/dev/null || { echo "no qemu-system-x86_64: apt-get install qemu-system-x86" >&2; exit 2; }
[ -x /bin/busybox ] || { echo "no /bin/busybox: apt-get install busybox-static" >&2; exit 2; }

work=$(mktemp -d /tmp/podyard-cgroup-v2-vm.XXXXXX)
trap 'rm -rf "$work"' EXIT
initramfs=$work/initramfs
mkdir -p "$initramfs"/{bin,mods,proc,sys,dev,lower,upper,newroot} "$work/share"
cp /bin/busybox "$initramfs/bin/"

# What the initramfs needs to reach the root filesystem (virtio's PCI transport, 9p, overlay),
# with their dependencies in load order; everything else loads from the root filesystem.
for module in virtio_pci 9pnet_virtio 9p overlay; do
  modprobe -S "$version" --show-depends "$module"
done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' >"$work/modules"
while read -r module; do cp "$module" "$initramfs/mods/"; done <"$work/modules"
sed 's|.*/||' "$work/modules" >"$initramfs/modules"

cat >"$initramfs/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for module in $(cat /modules); do insmod "/mods/$module"; done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=524288,cache=loose hostroot /lower
mount -t tmpfs -o size=8g tmpfs /upper
mkdir -p /upper/data /upper/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/upper/data,workdir=/upper/work /newroot
cp /guest-init /newroot/podyard-vm-init
umount /proc /sys
mount --move /dev /newroot/dev
exec switch_root /newroot /podyard-vm-init
EOF

cat >"$initramfs/guest-init" <<'EOF'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
mount -t tmpfs -o size=4g tmpfs /tmp
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mkdir -p /vmshare
mount -t 9p -o trans=virtio,version=9p2000.L vmshare /vmshare
if [ -s /vmshare/out-dir ]; then
  mkdir -p "$(cat /vmshare/out-dir)"
  mount -t 9p -o trans=virtio,version=9p2000.L vmout "$(cat /vmshare/out-dir)"
fi
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
hostname podyard-cgroup-v2-vm
ip link set lo up
# No udev here: the modules whose device nodes are used (/dev/net/tun for pasta,
# /dev/loop-control for the workloads' disks) and the disk's driver are loaded by hand.
for module in tun loop virtio_blk virtio_net; do modprobe "$module"; done
sleep 1
card=$(ls /sys/class/net | grep -v '^lo$' | head -1)
ip link set "$card" up
ip addr add 10.0.2.15/24 dev "$card"
ip route add default via 10.0.2.2
echo 'nameserver 10.0.2.3' >/etc/resolv.conf
mkdir -p /mnt/disk
mount /dev/vda /mnt/disk
export TMPDIR=/mnt/disk
# The command runs as a systemd service with Delegate=yes would: in a cgroup of its own below
# the root, with the controllers enabled for it (the server then delegates within its own).
echo '+cpu +io +memory +pids' >/sys/fs/cgroup/cgroup.subtree_control
mkdir /sys/fs/cgroup/podyard-test.service
echo $$ >/sys/fs/cgroup/podyard-test.service/cgroup.procs
echo "== cgroup v2 VM: kernel $(uname -r), in $(cut -d: -f3 /proc/self/cgroup), controllers: $(cat /sys/fs/cgroup/podyard-test.service/cgroup.controllers)"
# Through a pipe: the serial console is a terminal, and test runners redraw on one.
{
  sh /vmshare/run.sh </dev/null
  echo $? >/vmshare/status
} 2>&1 | cat
sync
echo o >/proc/sysrq-trigger
sleep 10
EOF
chmod +x "$initramfs/init" "$initramfs/guest-init"
(cd "$initramfs" && find . | cpio -o -H newc --quiet | gzip -1 >"$work/initramfs.gz")

{
  printf 'cd %q\n' "$repo"
  printf 'export CI=%q PODYARD_TEST_CGROUP_VERSION=2\n' "${CI:-}"
  printf '%q ' "$@"
  printf '\n'
} >"$work/share/run.sh"

out_share=()
if [ -n "$out" ]; then
  printf '%s' "$out" >"$work/share/out-dir"
  out_share=(-virtfs "local,path=$out,mount_tag=vmout,security_model=none,multidevs=remap")
fi

truncate -s 4G "$work/disk.img"
mkfs.ext4 -q "$work/disk.img"

accel=${PODYARD_VM_ACCEL:-tcg,thread=multi}
timeout "${PODYARD_VM_TIMEOUT_S:-1200}" qemu-system-x86_64 -accel "$accel" -smp 2 -m 8192 \
  -nographic -no-reboot -nic user,model=virtio-net-pci \
  -drive "file=$work/disk.img,format=raw,if=virtio" \
  -kernel "$kernel" -initrd "$work/initramfs.gz" -append 'console=ttyS0 quiet panic=-1' \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
  -virtfs "local,path=$work/share,mount_tag=vmshare,security_model=none,multidevs=remap" \
  "${out_share[@]}" |
  sed -u 's/\x1b\[[0-9;?]*[a-zA-Z]//g; s/\x1bc//g'

if [ ! -s "$work/share/status" ]; then
  echo "cgroup v2 VM: the command did not finish (no exit status came back)" >&2
  exit 1
fi
exit "$(cat "$work/share/status")"
