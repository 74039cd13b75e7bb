#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The install stage's guest half (install-stage.sh boots a stock guest whose
# root is the overlay that `make install` and `make dkms-install` wrote).
# The command copies this script and rs-installed.c to /tmp and runs it from
# there, because the first thing it does is hide the build tree:
#
#   install-guest.sh BUILD-TREE PROGRAM.c
#
# Then, with nothing of the tree visible: modprobe rdmashare (the module
# DKMS built for this kernel), udev gives /dev/rdmashare the installed rule's
# mode, a program built through pkg-config against the installed header and
# library (shared and static) runs as an unprivileged user, `rdmashare
# status` works, and the module unloads.

set -uo pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

tree=$1
prog=$2
kver=$(uname -r)
fail=0
udevd=

bad() {
	echo "install-guest: FAIL: $*"
	fail=1
}

step() {
	echo "install-guest: $*"
}

cd /
# The tree: its 9p share, and its copy in the root file system below.
umount "$tree" 2>/dev/null
mount -t tmpfs -o ro,mode=0755,size=4k rs-hidden "$tree" || bad "cannot hide $tree"
[ -z "$(ls -A "$tree")" ] || bad "$tree is still visible"

step "modprobe rdmashare ($kver)"
modprobe rdmashare || bad "modprobe rdmashare"
file=$(modinfo -F filename rdmashare 2>/dev/null)
case $file in
"/lib/modules/$kver/updates/dkms/rdmashare.ko"*) step "the module is DKMS's: $file" ;;
*) bad "modinfo says the module is '$file', not DKMS's under /lib/modules/$kver/updates/dkms" ;;
esac
[ -e /sys/module/rdmashare ] || bad "rdmashare is not loaded"

# udev applies the installed rule (60-rdmashare.rules: mode 0666).  The
# module asks devtmpfs for 0666 too, so the node starts at 0600 here: only
# the rule brings it back.
if [ -e /sys/class/misc/rdmashare ]; then
	chmod 0600 /dev/rdmashare
	/lib/systemd/systemd-udevd --daemon --resolve-names=never 2>/dev/null && udevd=1
	udevadm trigger --action=add --settle /sys/class/misc/rdmashare ||
		bad "udevadm trigger"
	mode=$(stat -c %a /dev/rdmashare 2>/dev/null)
	if [ "$mode" = 666 ]; then
		step "udev: /dev/rdmashare mode $mode (60-rdmashare.rules)"
	else
		bad "/dev/rdmashare has mode '$mode' after udev, the rule says 0666"
	fi
	[ -z "$udevd" ] || udevadm control --exit
else
	bad "no /sys/class/misc/rdmashare"
fi

step "pkg-config: $(pkg-config --modversion rdmashare 2>&1) $(pkg-config --cflags --libs rdmashare 2>&1)"
# shellcheck disable=SC2046
gcc -Wall -Wextra -Werror -o /tmp/rs-installed "$prog" $(pkg-config --cflags --libs rdmashare) ||
	bad "building against the installed library"
lib=$(ldd /tmp/rs-installed 2>/dev/null | awk '$1 ~ /^librdmashare\.so/ { print $3 }')
case $lib in
/usr/local/lib/librdmashare.so.*) step "linked with $lib" ;;
*) bad "the program's librdmashare is '$lib', not the installed one" ;;
esac
# shellcheck disable=SC2046
gcc -Wall -Wextra -Werror -o /tmp/rs-installed-static "$prog" \
	$(pkg-config --cflags rdmashare) "$(pkg-config --variable=libdir rdmashare)/librdmashare.a" ||
	bad "building against the installed static library"
port=7000
for p in /tmp/rs-installed /tmp/rs-installed-static; do
	port=$((port + 1))
	[ -x "$p" ] || continue
	if setpriv --reuid=65534 --regid=65534 --clear-groups "$p" "$RS_IP" $port; then
		step "${p##*/} ran as uid 65534"
	else
		bad "${p##*/} (as uid 65534)"
	fi
done

step "rdmashare status"
rdmashare status || bad "rdmashare status"
rdmashare status | grep -q rxe0 || bad "rdmashare status does not show rxe0"

modprobe -r rdmashare || bad "modprobe -r rdmashare"
[ ! -e /sys/module/rdmashare ] || bad "rdmashare still loaded"
[ $fail = 0 ] && echo "install-guest: ok"
exit $fail
