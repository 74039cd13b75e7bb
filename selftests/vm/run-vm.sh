#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot a kernel under QEMU (TCG), with Soft-RoCE and rdmashare.ko loaded, run
# one command inside, and report.  Exit status: the command's, or 1 when the
# guest's kernel log shows a BUG, WARNING, Oops, KASAN, lockdep or kmemleak
# report, the module does not unload, or the run times out.
#
# usage: run-vm.sh [options] -- COMMAND...
#   --kernel K       6.1 | 6.12 | debug (default 6.12)
#   --module PATH    rdmashare.ko to insmod (default: kmod/rdmashare.ko)
#   --no-module      do not load rdmashare.ko
#   --module-args A  module parameters for insmod
#   --peer CMD       two-guest mode: boot a second guest on the same emulated
#                    link and run CMD there (the peer).  COMMAND runs on the
#                    first guest; both must succeed.
#   --peer-reboot CMD
#                    the peer's CMD cuts its guest's power: it creates the
#                    file $RS_WORK/poweroff and waits, and run-vm.sh stops
#                    that QEMU at once (no shutdown, nothing more on the
#                    link); the peer then boots again, with the same
#                    addresses, and runs this CMD.  Results of the second
#                    boot are under the name b2.
#   --timeout SEC    limit for the command (default 300); the VM gets 120 s
#                    more for boot and shutdown
#   --out DIR        keep the results in DIR (default: a temporary directory,
#                    removed afterwards)
#   --quiet          print the command's output only when the run fails
#   --root DIR       the guests' root file system (default /, the host's);
#                    the install stage passes its overlay of the host root
#
# In the guest: the host root (or --root) read-only at /, tmpfs on /tmp, /run, /root;
# rxe0 on veth0 (one guest, address $RS_IP, loopback) or on eth0 (two guests,
# $RS_IP and $RS_PEER_IP); the environment has RS_IP, RS_IP6, RS_PEER_IP,
# RS_PEER_IP6, RS_MODULE and RS_WORK (the guest's results directory).  The
# command runs in the current directory.
#
# For experiments: RS_VM_SMP and RS_VM_MEM (guest CPUs and MiB), RS_VM_CPU
# (QEMU's -cpu model), RS_VM_APPEND (more kernel parameters),
# RS_VM_TCG_THREAD (single: QEMU's -accel tcg,thread=single).

set -euo pipefail
. "$(dirname "$0")/lib.sh"

kernel=6.12
module=$RS_TOP/kmod/rdmashare.ko
module_args=
peer_cmd=
reboot_cmd=
timeout=300
out=
quiet=0
root=/
smp=${RS_VM_SMP:-}
mem=${RS_VM_MEM:-2048}

while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernel=$2; shift 2 ;;
	--module) module=$(realpath "$2"); shift 2 ;;
	--no-module) module=; shift ;;
	--module-args) module_args=$2; shift 2 ;;
	--peer) peer_cmd=$2; shift 2 ;;
	--peer-reboot) reboot_cmd=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--quiet) quiet=1; shift ;;
	--root) root=$(realpath "$2"); shift 2 ;;
	--) shift; break ;;
	*) rs_die "run-vm.sh: unknown option $1" ;;
	esac
done
[ $# -gt 0 ] || rs_die "run-vm.sh: no command given"
[ -z "$reboot_cmd" ] || [ -n "$peer_cmd" ] || rs_die "run-vm.sh: --peer-reboot needs --peer"
[ -z "$module" ] || [ -e "$module" ] || rs_die "no module at $module (run make)"
case $module in
"" | "$RS_TOP"/*) ;;
*) rs_log "note: $module is outside $RS_TOP; the guest sees it only if the" \
	"path is not under /tmp, /run, /var/tmp, /var/lib, /var/log or /root" ;;
esac

# The kernel: image, release, module tree.
moddir=
case $kernel in
6.1 | 6.12)
	kver=$(rs_stock_kver "$kernel") ||
		rs_die "Debian's $kernel kernel is not installed (run: make deps)"
	vmlinuz=/boot/vmlinuz-$kver
	;;
debug)
	dk=$("$RS_VM_DIR/debug-kernel.sh")
	kver=$(cat "$dk/kver")
	vmlinuz=$dk/bzImage
	moddir=$dk/mods/lib/modules
	;;
*) rs_die "unknown kernel '$kernel' (6.1, 6.12 or debug)" ;;
esac

# Tiny initramfs for the stock kernels (9p and virtio are modules there),
# cached per kernel release and init script.
make_initramfs() {
	local kver=$1 key dst tmp m f
	key=$(cat "$RS_VM_DIR/initramfs-init" | sha256sum | cut -c1-12)
	dst=$RS_CACHE/initramfs/$kver-$key.cpio.gz
	if [ -e "$dst" ]; then
		printf '%s\n' "$dst"
		return
	fi
	mkdir -p "$RS_CACHE/initramfs"
	tmp=$(mktemp -d)
	mkdir -p "$tmp"/{bin,dev,proc,sys,modules,newroot}
	cp /bin/busybox "$tmp/bin/busybox"
	cp "$RS_VM_DIR/initramfs-init" "$tmp/init"
	chmod +x "$tmp/init"
	: >"$tmp/modules/order"
	for m in $(modprobe -S "$kver" --show-depends -a virtio_pci 9pnet_virtio 9p |
		awk '$1 == "insmod" { print $2 }'); do
		f=$(basename "$m")
		f=${f%.xz}
		f=${f%.zst}
		grep -qxF "$f" "$tmp/modules/order" && continue
		case $m in
		*.xz) xz -dc "$m" >"$tmp/modules/$f" ;;
		*.zst) zstd -qdc "$m" >"$tmp/modules/$f" ;;
		*) cp "$m" "$tmp/modules/$f" ;;
		esac
		echo "$f" >>"$tmp/modules/order"
	done
	(cd "$tmp" && find . | cpio -o -H newc --quiet | gzip -1) >"$dst.tmp"
	mv "$dst.tmp" "$dst"
	rm -rf "$tmp"
	printf '%s\n' "$dst"
}

# mitigations=off: the guests run nothing but the tests, and without the
# CPU side-channel mitigations they run about twice as fast under TCG.
# RS_VM_APPEND=tsc=reliable keeps the clocksource watchdog off the
# emulated TSC, whose live switch to the HPET can end in an "Oops: int3"
# in sched_clock_cpu under multi-threaded TCG (testing.rst); not the
# default: see testing.rst.
common_append="console=ttyS0 panic=-1 oops=panic loglevel=6 pci=noacpi kasan_multi_shot mitigations=off ${RS_VM_APPEND:-}"
cpu_args=()
[ -z "${RS_VM_CPU:-}" ] || cpu_args=(-cpu "$RS_VM_CPU")
# RS_VM_TCG_THREAD=single: one host thread runs every vCPU (QEMU's
# -accel tcg,thread=single) instead of one per vCPU.
accel=tcg${RS_VM_TCG_THREAD:+,thread=$RS_VM_TCG_THREAD}
if [ "$kernel" = debug ]; then
	initrd=()
	append="$common_append root=hostroot rootfstype=9p rootflags=trans=virtio,version=9p2000.L,msize=512000,cache=loose ro init=$RS_VM_DIR/guest-init.sh"
else
	initrd=(-initrd "$(make_initramfs "$kver")")
	append="$common_append rsinit=$RS_VM_DIR/guest-init.sh"
fi

if [ -n "$out" ]; then
	mkdir -p "$out"
	out=$(realpath "$out")
	keep=1
else
	out=$(mktemp -d /tmp/rs-vm.XXXXXX)
	keep=0
fi

guests=(a)
[ -z "$peer_cmd" ] || guests=(a b)
if [ -z "$smp" ]; then
	smp=2
	[ -z "$peer_cmd" ] || smp=1
fi

pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		pkill -P "$p" 2>/dev/null || true
		kill "$p" 2>/dev/null || true
	done
	[ "$keep" = 1 ] || rm -rf "$out"
}
trap cleanup EXIT

# Two free UDP ports on 127.0.0.1 for the emulated link.
free_udp_port() {
	python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
if [ -n "$peer_cmd" ]; then
	port_a=$(free_udp_port)
	port_b=$(free_udp_port)
fi

# boot_guest NAME ROLE CMD [cut]: one guest, in the foreground.  ROLE a or b
# picks the addresses; NAME names its results directory.  With "cut", the
# guest's power is cut when it creates the file "poweroff" in its results.
boot_guest() {
	local name=$1 role=$2 cmd=$3 cut=${4:-} w=$out/$1 ip ip6 peer peer6 net lp rp mac
	local qpid
	local netargs=(-nic none)
	# Nothing of an earlier run in a kept --out: its rc would stand for
	# this guest's if this one crashed before writing its own.
	rm -rf "$w"
	mkdir -p "$w"
	chmod 0777 "$w"
	printf '%s\n' "$cmd" >"$w/cmd"
	if [ "$role" = a ]; then
		ip=198.18.0.1 ip6=fd00:198:18::1 peer=198.18.0.2 peer6=fd00:198:18::2
	else
		ip=198.18.0.2 ip6=fd00:198:18::2 peer=198.18.0.1 peer6=fd00:198:18::1
	fi
	net=veth
	if [ -n "$peer_cmd" ]; then
		net=eth
		if [ "$role" = a ]; then lp=$port_a rp=$port_b; mac=52:54:00:18:00:01
		else lp=$port_b rp=$port_a; mac=52:54:00:18:00:02; fi
		netargs=(-netdev "socket,id=n0,udp=127.0.0.1:$rp,localaddr=127.0.0.1:$lp"
			-device "virtio-net-pci,netdev=n0,mac=$mac,romfile=")
	fi
	cat >"$w/job.env" <<-EOT
		RS_HOSTNAME=rs-$role
		RS_NET=$net
		RS_IP=$ip
		RS_IP6=$ip6
		RS_PEER_IP=$peer
		RS_PEER_IP6=$peer6
		RS_MODULE='$module'
		RS_MODULE_ARGS='$module_args'
		RS_MODDIR='$moddir'
		RS_CWD='$PWD'
		RS_TOP='$RS_TOP'
		RS_CMD_TIMEOUT=$timeout
	EOT
	timeout -k 10 $((timeout + 120)) qemu-system-x86_64 \
		-accel "$accel" "${cpu_args[@]}" -m "$mem" -smp "$smp" \
		-nographic -no-reboot -nodefaults -serial "file:$w/console.log" \
		-kernel "$vmlinuz" "${initrd[@]}" -append "$append" \
		-virtfs "local,path=$root,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
		-virtfs "local,path=$w,mount_tag=work,security_model=none" \
		-virtfs "local,path=$RS_TOP,mount_tag=repo,security_model=none,readonly=on,multidevs=remap" \
		"${netargs[@]}" </dev/null >"$w/qemu.log" 2>&1 &
	qpid=$!
	while [ -n "$cut" ] && kill -0 "$qpid" 2>/dev/null; do
		if [ -e "$w/poweroff" ]; then
			# timeout passes SIGTERM on: QEMU stops the machine at once.
			kill -TERM "$qpid" 2>/dev/null || true
			break
		fi
		sleep 0.2
	done
	wait "$qpid" || true
}

start=$(date +%s)
boot_guest a a "$*" &
pids+=($!)
if [ -n "$peer_cmd" ]; then
	if [ -n "$reboot_cmd" ]; then
		guests=(a b b2)
		{ boot_guest b b "$peer_cmd" cut; boot_guest b2 b "$reboot_cmd"; } &
	else
		boot_guest b b "$peer_cmd" &
	fi
	pids+=($!)
fi

fail=0
for p in "${pids[@]}"; do
	wait "$p" || true
done
pids=()
elapsed=$(( $(date +%s) - start ))

# Verdict per guest.
problems='BUG:|PANIC:|WARNING:|Oops|KASAN|UBSAN|general protection|Kernel panic|possible (circular|recursive) locking|inconsistent lock state|lock held when returning|suspicious RCU usage|INFO: task .* blocked|kmemleak: .* new suspected|unreferenced object|list_(add|del) corruption|ODEBUG:'
# The first problem in a kernel log, quoted so that filters on kernel log
# lines ("[    1.234567] ...") do not hide it.
excerpt() {
	grep -m1 -A40 -E "$problems" "$1" | sed 's/^/  | /' >&2
}

# The last test run_tests.sh said it started (its marks in the kernel log).
last_test() {
	local t
	t=$(grep -oE 'rdmashare-selftest: .*' "$2" | tail -n1)
	[ -z "$t" ] || echo "[rdmashare] vm $kernel guest $1: last test started: ${t#rdmashare-selftest: }" >&2
}

report() {
	local g=$1 w=$out/$1 rc why=
	rc=$(cat "$w/rc" 2>/dev/null || echo none)
	if [ "$g" = b ] && [ -n "$reboot_cmd" ]; then
		# Its power cut on purpose: no results but its console.
		if [ ! -e "$w/poweroff" ]; then
			why="the peer did not ask for its power cut as --peer-reboot expects"
		fi
		if grep -qE "$problems" "$w/console.log"; then
			why="${why:+$why; }kernel log shows a problem"
		fi
		if [ -n "$why" ]; then
			echo "[rdmashare] vm $kernel guest $g: FAIL: $why" >&2
			excerpt "$w/console.log"
			return 1
		fi
		return 0
	fi
	case $rc in
	none) why="no result (guest crashed or timed out)" ;;
	0) ;;
	124) why="command timed out after ${timeout}s" ;;
	125) why="RDMA setup failed" ;;
	126) why="insmod failed" ;;
	*) why="command exited $rc" ;;
	esac
	if [ -s "$w/unload.log" ]; then
		why="${why:+$why; }rmmod rdmashare failed"
	fi
	if [ -s "$w/kmemleak.log" ]; then
		why="${why:+$why; }kmemleak reports leaks"
	fi
	if [ -e "$w/dmesg.log" ] &&
		grep -qE "$problems" "$w/dmesg.log"; then
		why="${why:+$why; }kernel log shows a problem"
	fi
	if [ ! -e "$w/dmesg.log" ] && [ -z "$why" ]; then
		why="no kernel log"
	fi
	if [ -n "$why" ]; then
		echo "[rdmashare] vm $kernel guest $g: FAIL: $why" >&2
		if [ -e "$w/dmesg.log" ]; then
			last_test "$g" "$w/dmesg.log"
			excerpt "$w/dmesg.log"
		else
			last_test "$g" "$w/console.log"
			excerpt "$w/console.log"
		fi
		return 1
	fi
	return 0
}

show() {
	local g=$1 w=$out/$1
	echo "----- guest $g ($kernel, $kver): output -----"
	cat "$w/setup.log" 2>/dev/null | sed 's/^/setup: /' || true
	cat "$w/out.log" 2>/dev/null || true
	[ ! -s "$w/unload.log" ] || { echo "----- guest $g: rmmod -----"; cat "$w/unload.log"; }
	[ ! -s "$w/kmemleak.log" ] || { echo "----- guest $g: kmemleak -----"; cat "$w/kmemleak.log"; }
}

show_kernel_log() {
	local g=$1 w=$out/$1
	echo "----- guest $g: kernel log -----"
	if [ -e "$w/dmesg.log" ]; then
		cat "$w/dmesg.log"
	else
		tail -n 80 "$w/console.log" 2>/dev/null || true
		tail -n 20 "$w/qemu.log" 2>/dev/null || true
	fi
}

for g in "${guests[@]}"; do
	if report "$g"; then
		[ "$quiet" = 1 ] || show "$g"
	else
		fail=1
		show "$g"
		show_kernel_log "$g"
	fi
done
echo "[rdmashare] vm $kernel: ${#guests[@]} guest(s), ${elapsed}s, $([ $fail = 0 ] && echo ok || echo FAILED)" >&2
[ "$keep" = 0 ] || echo "[rdmashare] results kept in $out" >&2
exit $fail
