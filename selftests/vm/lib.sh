# SPDX-License-Identifier: GPL-2.0
# Shared helpers for the rdmashare test infrastructure.  Sourced, not run.

RS_VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RS_TOP=$(cd "$RS_VM_DIR/../.." && pwd)
# Expensive artefacts (the debug kernel, unpacked sources) live outside the
# repository so that a clean clone on a warm machine reuses them.
RS_CACHE=${RDMASHARE_CACHE:-/var/cache/rdmashare}

rs_log() { printf '[rdmashare] %s\n' "$*" >&2; }
rs_die() { printf '[rdmashare] error: %s\n' "$*" >&2; exit 1; }

# rs_emulator_int3 LOG: did the guest of this run-vm.sh log die of the
# emulator's known fault?  QEMU 7.2's multi-threaded TCG sometimes runs code
# the kernel is patching live (static keys, tracepoints) and the guest dies
# of an "Oops: int3" in kernel code rdmashare does not patch (seen in
# sched_clock_cpu at boot, before any module, and in trace_sched_wakeup).
# The module uses no kprobes or text patching (the trace tests enable
# tracepoints, as few times as they can), so the callers boot such a guest
# once more, and say so.  Any other failure counts at once.
rs_emulator_int3() {
	grep -qE '^  \| .*Oops: int3' "$1"
}

# rs_guest_clock_jumped LOG: did the guest's clock jump by more than a whole
# run could last?  When the machine running QEMU is paused, snapshotted or
# forked (its kernel says "crng reseeded due to virtual machine fork"), the
# guest wakes up to days gone by: RCU reports a stall of that length
# ("t=487244555 jiffies"), and the run hangs.  A million jiffies are over an
# hour at the Debian kernels' HZ of 250, longer than any run; the callers
# boot such a guest once more, and say so.
rs_guest_clock_jumped() {
	grep -oE 'detected by [0-9]+, t=[0-9]+ jiffies' "$1" |
		sed -n 's/.*t=\([0-9]*\) jiffies/\1/p' |
		awk '$1 >= 1000000 { found = 1 } END { exit !found }'
}

# rs_stock_kver SERIES: newest installed Debian kernel of a series ("6.1",
# "6.12") that has an image, a module tree and headers.
rs_stock_kver() {
	local series=$1 v best=
	for v in /boot/vmlinuz-"$series".*; do
		[ -e "$v" ] || continue
		v=${v#/boot/vmlinuz-}
		[ -d "/lib/modules/$v/kernel" ] || continue
		[ -e "/usr/src/linux-headers-$v/Makefile" ] || continue
		best=$(printf '%s\n%s\n' "$best" "$v" | sed '/^$/d' | sort -V | tail -n1)
	done
	[ -n "$best" ] || return 1
	printf '%s\n' "$best"
}

# rs_kbuild KDIR DIR [make args]: the modules of DIR's Kbuild (a private
# copy of their sources) against the kernel build tree KDIR, with W=1 and
# sparse (C=2); the log in DIR/build.log.  Dies when the build fails or
# prints any compiler or sparse diagnostic (the headers' own notes about
# BTF or signing are not ours).
rs_kbuild() {
	local kdir=$1 dir=$2 status=0
	shift 2
	make -C "$kdir" M="$dir" W=1 C=2 "$@" modules >"$dir/build.log" 2>&1 || status=$?
	if [ $status -ne 0 ]; then
		cat "$dir/build.log"
		rs_die "module build in $dir failed against $kdir"
	fi
	if grep -E 'warning:|error:|: note:' "$dir/build.log" | grep -vE '^Skipping BTF' >"$dir/warnings.log"; then
		cat "$dir/warnings.log"
		rs_die "module build in $dir against $kdir printed warnings"
	fi
}

rs_src_version() {
	dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null
}

# Cache key of the debug kernel: source package version + config fragment.
rs_debug_key() {
	local ver
	ver=$(rs_src_version) || return 1
	[ -n "$ver" ] || return 1
	{ printf '%s\n' "$ver"; cat "$RS_VM_DIR/debug.config"; } |
		sha256sum | cut -c1-16
}

rs_debug_dir() {
	local key
	key=$(rs_debug_key) || return 1
	printf '%s/debug-kernel/%s\n' "$RS_CACHE" "$key"
}

# Unpacked linux-source-6.12 (shared by the debug kernel build and the
# kselftest harness headers).
rs_src_dir() {
	printf '%s/src/linux-source-%s\n' "$RS_CACHE" "$(rs_src_version)"
}

rs_ensure_src() {
	local dir tmp
	dir=$(rs_src_dir)
	[ -e "$dir/.unpacked" ] && { printf '%s\n' "$dir"; return 0; }
	[ -e /usr/src/linux-source-6.12.tar.xz ] ||
		rs_die "linux-source-6.12 is not installed (run: make deps)"
	rs_log "unpacking /usr/src/linux-source-6.12.tar.xz into $dir"
	mkdir -p "$RS_CACHE/src"
	tmp=$(mktemp -d "$RS_CACHE/src/.unpack.XXXXXX")
	tar -C "$tmp" -xf /usr/src/linux-source-6.12.tar.xz
	rm -rf "$dir"
	mv "$tmp/linux-source-6.12" "$dir"
	rmdir "$tmp"
	touch "$dir/.unpacked"
	printf '%s\n' "$dir"
}
