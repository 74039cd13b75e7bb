#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make demo: install what is missing, build, boot two guests (Debian's 6.12
# under QEMU, Soft-RoCE on one emulated link), load rdmashare.ko in both and
# show what it sees, then exchange RDMA traffic between the guests.

set -euo pipefail
. "$(dirname "$0")/lib.sh"

B=${RS_BUILD:-$RS_TOP/build}
rs_log "demo: checking dependencies"
bash "$RS_VM_DIR/deps.sh"
kver=$(rs_stock_kver 6.12) || rs_die "Debian's 6.12 kernel is not installed"
rs_log "demo: building the module for $kver and the user library"
make -s -C "$RS_TOP" userlib selftests
bash "$RS_VM_DIR/build-module.sh" "/usr/src/linux-headers-$kver" "$B/6.12"
rs_log "demo: booting two guests (software emulation: about a minute)"
exec bash "$RS_VM_DIR/run-vm.sh" --kernel 6.12 --module "$B/6.12/kmod/rdmashare.ko" \
	--timeout 300 --peer "$RS_VM_DIR/demo-guest.sh peer" \
	-- "$RS_VM_DIR/demo-guest.sh client"
