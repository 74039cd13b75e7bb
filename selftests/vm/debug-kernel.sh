#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (or reuse) the rdmashare debug kernel: Debian's linux-source-6.12 with
# debug.config merged in (KUnit, KASAN, lockdep, kmemleak, RDMA built as
# modules).  The result is cached under $RDMASHARE_CACHE/debug-kernel/<key>,
# where <key> hashes the source package version and the config fragment, so
# it is rebuilt only when either changes.
#
# Prints the cache directory on stdout.  Layout:
#   bzImage           the kernel
#   build/            the O= build tree (KDIR for out-of-tree modules)
#   mods/lib/modules/ modules_install output, bind-mounted in the guest
#   kver              the kernel release string

set -euo pipefail
. "$(dirname "$0")/lib.sh"

out=$(rs_debug_dir) || rs_die "linux-source-6.12 is not installed (run: make deps)"
if [ -e "$out/.done" ]; then
	rs_log "debug kernel cached in $out"
	printf '%s\n' "$out"
	exit 0
fi

mkdir -p "$RS_CACHE/debug-kernel"
exec 9>"$RS_CACHE/debug-kernel/.lock"
flock 9
if [ -e "$out/.done" ]; then
	printf '%s\n' "$out"
	exit 0
fi

src=$(rs_ensure_src)
jobs=${RS_JOBS:-$(nproc)}
rs_log "building the debug kernel in $out (about 20-30 minutes on 2 cores)"
start=$(date +%s)
rm -rf "$out"
mkdir -p "$out/build"
b="$out/build"
{
	make -C "$src" O="$b" x86_64_defconfig
	make -C "$src" O="$b" kvm_guest.config
	"$src/scripts/kconfig/merge_config.sh" -m -O "$b" "$b/.config" \
		"$RS_VM_DIR/debug.config"
	make -C "$src" O="$b" olddefconfig
} >"$out/config.log" 2>&1 || { tail -n 30 "$out/config.log" >&2; rs_die "kernel configuration failed"; }

# Every option the fragment asks for must have survived olddefconfig.
missing=0
while IFS= read -r line; do
	case $line in
	CONFIG_*=*)
		grep -qxF "$line" "$b/.config" || {
			rs_log "debug config: '$line' did not stick"
			missing=1
		}
		;;
	esac
done <"$RS_VM_DIR/debug.config"
[ "$missing" = 0 ] || rs_die "debug.config has options that olddefconfig dropped"

make -C "$src" O="$b" -j"$jobs" bzImage modules >"$out/build.log" 2>&1 ||
	{ tail -n 40 "$out/build.log" >&2; rs_die "debug kernel build failed (see $out/build.log)"; }
make -C "$src" O="$b" INSTALL_MOD_PATH="$out/mods" INSTALL_MOD_STRIP=1 \
	modules_install >>"$out/build.log" 2>&1 ||
	rs_die "modules_install failed (see $out/build.log)"
cp "$b/arch/x86/boot/bzImage" "$out/bzImage"
make -s -C "$src" O="$b" kernelrelease >"$out/kver"
touch "$out/.done"
rs_log "debug kernel $(cat "$out/kver") built in $(( $(date +%s) - start )) s"
printf '%s\n' "$out"
