# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2034 # the variables are the sourcing scripts'
#
# Sourced by the guest sides of the benchmarks (run in a guest through
# run-vm.sh): the repository ($top), its user tools ($bin), the guest's
# output directory ($work) and address ($ip), and gid_index.

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=$top/userlib/build
work=${RS_WORK:?RS_WORK is not set: run this in a guest through run-vm.sh}
ip=${RS_IP:?RS_IP is not set}

# gid_index DEV: the RoCE v2 GID index of $ip on RDMA device DEV's port 1
# (perftest's -x), a RoCE v1 one if there is no v2; nothing if none.
gid_index() {
	local dev=$1 g want d
	# shellcheck disable=SC2046,SC2183 # the four bytes of the address
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' $(echo "$ip" | tr . ' '))
	d=/sys/class/infiniband/$dev/ports/1
	for g in "$d"/gids/*; do
		[ "$(cat "$g" 2>/dev/null)" = "$want" ] || continue
		g=${g##*/}
		case $(cat "$d/gid_attrs/types/$g" 2>/dev/null) in
		*v2*) echo "$g"; return 0 ;;
		esac
	done
	for g in "$d"/gids/*; do
		[ "$(cat "$g" 2>/dev/null)" = "$want" ] && { echo "${g##*/}"; return 0; }
	done
}
