#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install, with apt and idempotently, everything rdmashare's build, tests and
# demo need on a Debian 12 machine.  Fast when nothing is missing.

set -euo pipefail

PKGS=(
	# build
	make gcc libc6-dev pkg-config sparse flex bison bc libelf-dev libssl-dev
	dwarves xz-utils zstd perl python3
	# kernels: Debian stock 6.1 and 6.12 (images for the guests, headers
	# for the module) and the 6.12 source for the debug kernel, KUnit and
	# the kselftest harness
	linux-image-amd64 linux-headers-amd64
	linux-image-6.12-amd64 linux-headers-6.12-amd64
	linux-source-6.12
	# guests
	qemu-system-x86 busybox-static kmod cpio iproute2 iputils-ping
	procps util-linux coreutils
	# RDMA user space: Soft-RoCE, verbs, rdma_cm, perftest and anchors
	rdma-core ibverbs-utils ibverbs-providers perftest rdmacm-utils
	libibverbs-dev librdmacm-dev qperf
	# benchmarks: make bench-sched's plot; make bench-sockets preloads
	# rsocket's librspreload.so (librdmacm1, named for it)
	python3-matplotlib librdmacm1
	# unmodified programs under rdmashare-run (rdmashare_preload_test);
	# the tests start redis-server themselves (its service, where systemd
	# runs, listens on the host alone)
	netcat-openbsd socat iperf3 sockperf redis-server redis-tools
	# curl against Python's http.server (python3 is there for PyTorch),
	# and against nginx (sendfile(2), workers sharing a listener)
	curl nginx-light
	# Node.js's cluster (a worker's libuv asks fstat() what the connection
	# the primary passed it is); a host that has NodeSource's nodejs keeps it
	nodejs
	# PostgreSQL and pgbench (a forked backend per connection; its
	# libcap-ng calls close() before the preload's constructor runs)
	postgresql-15
	# and Open MPI: mpirun, and mpicc for the test's rs_mpi
	openmpi-bin libopenmpi-dev
	# the parameter server's training on Fashion-MNIST (ps-train,
	# rdmashare_ps_test)
	dataset-fashion-mnist
	# PyTorch's gloo under rdmashare-run (torch-gloo.py, pair_preload.sh)
	python3-torch
	# packaging: man pages checked, DKMS
	man-db groff-base dkms
	# the install stage: udev applies the installed rule in the guests
	udev
)

missing=()
for p in "${PKGS[@]}"; do
	case $p in '#'*) continue ;; esac
	st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	[ "${st:0:2}" = "ii" ] || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
	echo "[rdmashare] deps: all ${#PKGS[@]} packages present"
	exit 0
fi

echo "[rdmashare] deps: installing ${missing[*]}"
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
