#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check's install stage: rdmashare installed as README.md's "Install on
# a real host" says, into a clean root, used from stock guests, uninstalled,
# and nothing left behind.
#
#   install-stage.sh [KERNEL...]     (default: 6.1 6.12)
#
# The clean root is a writable overlay over the host's root in a private
# mount namespace (the host's files are never touched; what the run writes
# lands in the overlay's upper layer, a tmpfs):
#
#  1. In the root (chroot, at native speed): `make install` and `make
#     dkms-install` in the build tree, as on a real host; man-check.sh on
#     the installed man pages.
#  2. For each kernel, a guest boots with that root (install-guest.sh):
#     the build tree hidden, `modprobe rdmashare` loads DKMS's module, udev
#     applies the installed rule, a program is built with pkg-config against
#     the installed library and runs, `rdmashare status`, unload.
#  3. In the root: `make uninstall` and `make dkms-uninstall`; then the upper
#     layer must be as it was before step 1 (after the same ldconfig and
#     depmod runs): no file of ours left, none of the host's removed.
#
# Results (logs, the guests' results, the upper layer's listing) go to
# RS_INSTALL_OUT (default build/check/install).

set -euo pipefail
. "$(dirname "$0")/lib.sh"

out=${RS_INSTALL_OUT:-$RS_TOP/build/check/install}
if [ "${RS_INSTALL_NS:-}" != 1 ]; then
	[ "$(id -u)" = 0 ] || rs_die "install-stage.sh: needs root (mount namespace, chroot)"
	rm -rf "$out"
	mkdir -p "$out"
	exec env RS_INSTALL_NS=1 RS_INSTALL_OUT="$(realpath "$out")" \
		unshare --mount --propagation private bash "$0" "$@"
fi

kernels=${*:-6.1 6.12}
kvers=
for k in $kernels; do
	v=$(rs_stock_kver "$k") || rs_die "Debian's $k kernel is not installed (make deps)"
	kvers="$kvers $v"
done

t=$(mktemp -d /tmp/rs-install.XXXXXX)
mount -t tmpfs -o mode=0755 rs-install "$t"
mkdir "$t/upper" "$t/work" "$t/root"
mount -t overlay rs-install -o "lowerdir=/,upperdir=$t/upper,workdir=$t/work" "$t/root"
root=$t/root
upper=$t/upper
finish() {
	umount -R "$root" 2>/dev/null || true
	umount "$t" 2>/dev/null || true
	rmdir "$t" 2>/dev/null || true
}
trap finish EXIT

# in_root CMD: run CMD with bash in the clean root, in the build tree.
in_root() {
	local rc=0
	mount -t proc proc "$root/proc"
	mount --rbind /sys "$root/sys"
	mount --rbind /dev "$root/dev"
	chroot "$root" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LC_ALL=C bash -euo pipefail -c "cd '$RS_TOP'; $1" || rc=$?
	umount -R "$root/dev" "$root/sys" "$root/proc"
	return $rc
}

# snapshot: the upper layer's entries (type, path; a file's checksum, a
# link's target), outside the build tree.  A directory of the host's root
# stays in the upper layer once something was written in it: only new ones
# count.
snapshot() {
	(cd "$upper" && find . -path "./${RS_TOP#/}" -prune -o ! -path . -printf '%y %p %l\n' |
		sort | while read -r y p l; do
			case $y$p in
			# ldconfig's caches are not rewritten byte for byte the
			# same (with many libraries its aux-cache alternates
			# between layouts): what ld.so.cache means counts, the
			# libraries it lists, and aux-cache only exists.
			f./etc/ld.so.cache)
				printf 'f %s libraries %s\n' "$p" \
					"$(ldconfig -p -C "$p" | sed 1d | sort | sha256sum | cut -c1-16)" ;;
			f./var/cache/ldconfig/aux-cache) printf 'f %s\n' "$p" ;;
			f*) printf 'f %s %s\n' "$p" "$(sha256sum <"$p" | cut -c1-16)" ;;
			l*) printf 'l %s -> %s\n' "$p" "$l" ;;
			c*) printf 'c %s (removed from the host root)\n' "$p" ;;
			d*) [ -d "/$p" ] || printf 'd %s\n' "$p" ;;
			*) printf '%s %s\n' "$y" "$p" ;;
			esac
		done)
}

echo "install: kernels$kvers; clean root $root"
# Before: what ldconfig and depmod write anyway (the host's own files), so
# that the comparison afterwards sees only what install and uninstall did.
in_root 'ldconfig; for k in /lib/modules/*; do
	[ ! -e $k/build/Makefile ] || depmod -a ${k##*/}; done'
snapshot >"$out/upper.before"

echo "install: make install && make dkms-install"
in_root "make install && make dkms-install" >"$out/install.log" 2>&1 || {
	tail -n 40 "$out/install.log"
	rs_die "make install or make dkms-install failed (log: $out/install.log)"
}
(cd "$upper" && find . -path "./${RS_TOP#/}" -prune -o -type f -print | sort) >"$out/installed"
echo "install: $(wc -l <"$out/installed") files in the root; man pages:"
in_root "bash selftests/vm/man-check.sh /usr/local/share/man"

# install_guest KERNEL: boot a guest of KERNEL on the root, run install-guest.sh.
install_guest() {
	bash "$RS_VM_DIR/run-vm.sh" --kernel "$1" --no-module --root "$root" \
		--timeout 600 --out "$out/vm-$1" -- \
		"cp '$RS_VM_DIR/install-guest.sh' '$RS_TOP/selftests/install/rs-installed.c' /tmp/ &&
		bash /tmp/install-guest.sh '$RS_TOP' /tmp/rs-installed.c" >"$out/vm-$1.log" 2>&1
}

fail=0
for k in $kernels; do
	ok=0
	install_guest "$k" && ok=1
	# The emulator's fault (lib.sh): once more, as check.sh does.
	if [ $ok = 0 ] && rs_emulator_int3 "$out/vm-$k.log"; then
		echo "install: guest $k died of the emulator's int3 fault (log: $out/vm-$k.log.int3); once more"
		mv "$out/vm-$k.log" "$out/vm-$k.log.int3"
		rm -rf "$out/vm-$k.int3"
		mv "$out/vm-$k" "$out/vm-$k.int3" 2>/dev/null || true
		install_guest "$k" && ok=1
	fi
	if [ $ok = 1 ]; then
		echo "install: guest $k: ok"
		grep '^install-guest: ' "$out/vm-$k.log" | sed 's/^/    /'
	else
		echo "install: guest $k: FAILED (log: $out/vm-$k.log)"
		grep -E '^install-guest|^rs-installed|^  \| |FAIL' "$out/vm-$k.log" | head -n 60 | sed 's/^/    /'
		fail=1
	fi
done

echo "install: make uninstall && make dkms-uninstall"
in_root "make uninstall && make dkms-uninstall" >"$out/uninstall.log" 2>&1 || {
	tail -n 40 "$out/uninstall.log"
	rs_die "make uninstall or make dkms-uninstall failed (log: $out/uninstall.log)"
}
snapshot >"$out/upper.after"
# dkms makes its machine-owner signing key on its first build and keeps it
# for every later module: dkms's state, not rdmashare's.
left=$(diff "$out/upper.before" "$out/upper.after" |
	grep -vE '^[<>] f \./var/lib/dkms/mok\.(key|pub) ' | grep -E '^[<>]' || true)
if [ -n "$left" ]; then
	echo "install: FAILED: the root differs after uninstall (< before, > after):"
	printf '%s\n' "$left" | sed 's/^/    /'
	fail=1
else
	echo "install: after uninstall the root is as before ($(wc -l <"$out/upper.after") entries of ldconfig and depmod)"
fi
# (Nothing at all there when the build was up to date.)
tree=$(cd "$upper" && find "./${RS_TOP#/}" ! -type d 2>/dev/null | head -n 20) || true
[ -z "$tree" ] || printf 'install: note: written into the build tree:\n%s\n' "$tree"
exit $fail
