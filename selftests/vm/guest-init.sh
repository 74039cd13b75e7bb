#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# PID 1 of an rdmashare test guest.  The root file system is the host's root,
# read-only over 9p; the job comes from the writable "work" share: job.env
# (settings written by run-vm.sh) and cmd (the command to run).  Results go
# back to the share: out.log, rc, unload.log, kmemleak.log, dmesg.log.

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=dumb LC_ALL=C

mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
for d in /tmp /run /var/tmp /var/lib /var/log /root; do
	mount -t tmpfs -o mode=0755 tmpfs "$d"
done
chmod 1777 /tmp /var/tmp
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mkdir -p /run/work
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 work /run/work || {
	echo "guest: cannot mount the work share"
	poweroff -f
}
W=/run/work
# shellcheck source=/dev/null
. $W/job.env

finish() {
	dmesg >$W/dmesg.log 2>&1
	sync
	umount /run/work 2>/dev/null
	poweroff -f
}

# The repository (tests, the module) at its host path, even when that path is
# under one of the tmpfs mounts above (a clone in /tmp or /root).
mkdir -p "$RS_TOP"
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose \
	repo "$RS_TOP" || echo "guest: cannot mount the repository share"

if [ -n "$RS_MODDIR" ]; then
	mount --bind "$RS_MODDIR" /lib/modules
fi
hostname "$RS_HOSTNAME"
ip link set lo up

# The kmemleak baseline: forget whatever boot left behind.
if [ -w /sys/kernel/debug/kmemleak ]; then
	echo scan >/sys/kernel/debug/kmemleak
	echo clear >/sys/kernel/debug/kmemleak
fi

setup_rdma() {
	modprobe crc32_generic 2>/dev/null
	modprobe rdma_rxe || return 1
	modprobe rdma_ucm || return 1
	case $RS_NET in
	veth)
		ip link add veth0 type veth peer name veth1 || return 1
		ip addr add "$RS_IP/24" dev veth0
		ip -6 addr add "$RS_IP6/64" dev veth0 nodad
		ip link set veth1 up && ip link set veth0 up || return 1
		rdma link add rxe0 type rxe netdev veth0 || return 1
		;;
	eth)
		modprobe virtio_net
		ip link set eth0 up || return 1
		ip addr add "$RS_IP/24" dev eth0
		ip -6 addr add "$RS_IP6/64" dev eth0 nodad
		rdma link add rxe0 type rxe netdev eth0 || return 1
		;;
	esac
	return 0
}

if ! setup_rdma >$W/setup.log 2>&1; then
	echo "guest: RDMA setup failed" >>$W/setup.log
	echo 125 >$W/rc
	finish
fi

if [ -n "$RS_MODULE" ]; then
	if ! insmod "$RS_MODULE" $RS_MODULE_ARGS >>$W/setup.log 2>&1; then
		echo "guest: insmod $RS_MODULE failed" >>$W/setup.log
		echo 126 >$W/rc
		finish
	fi
fi

RS_WORK=$W
export RS_IP RS_IP6 RS_PEER_IP RS_PEER_IP6 RS_MODULE RS_KUNIT_DIR RS_WORK
cd "$RS_CWD" || cd /
timeout -k 5 "$RS_CMD_TIMEOUT" bash $W/cmd </dev/null >$W/out.log 2>&1
echo $? >$W/rc

# Whatever the command left behind goes, with its files.
kill -9 -1 2>/dev/null
sleep 1

# The module must unload cleanly once the test is done with it.
if [ -n "$RS_MODULE" ] && [ -e /sys/module/rdmashare ]; then
	rmmod rdmashare >$W/unload.log 2>&1 || echo "rmmod failed: $?" >>$W/unload.log
fi

# Kmemleak only reports objects older than 5 s: wait, then scan twice.
if [ -w /sys/kernel/debug/kmemleak ]; then
	sleep 6
	echo scan >/sys/kernel/debug/kmemleak
	echo scan >/sys/kernel/debug/kmemleak
	cat /sys/kernel/debug/kmemleak >$W/kmemleak.log
fi
finish
