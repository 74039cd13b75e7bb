#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run rdmashare's kselftests (and, with --kunit, its KUnit module) inside a
# test guest, print their TAP output and end with one summary line:
#   # rdmashare-results: pass:N fail:N skip:N
# A test program that dies without its "# Totals:" line counts as a failure.
# Exit status: 0 only when nothing failed and nothing was skipped.
#
# usage: run_tests.sh [--kunit rdmashare_kunit.ko] [TEST...]
#   TEST defaults to every program in build/tests.list.

here=$(cd "$(dirname "$0")" && pwd)
kunit=
while [ $# -gt 0 ]; do
	case $1 in
	--kunit) kunit=$2; shift 2 ;;
	*) break ;;
	esac
done
if [ $# -eq 0 ]; then
	mapfile -t tests <"$here/build/tests.list"
else
	tests=("$@")
fi

pass=0 fail=0 skip=0

# Add up "# Totals: pass:N fail:N ... skip:N" lines; return 1 if none.
count_totals() {
	local f=$1 line p x s seen=1
	while IFS= read -r line; do
		p=$(sed -n 's/.*Totals: pass:\([0-9]*\).*/\1/p' <<<"$line")
		x=$(sed -n 's/.* fail:\([0-9]*\).*/\1/p' <<<"$line")
		s=$(sed -n 's/.* skip:\([0-9]*\).*/\1/p' <<<"$line")
		pass=$((pass + ${p:-0}))
		fail=$((fail + ${x:-0}))
		skip=$((skip + ${s:-0}))
		seen=0
	done < <(grep -E '^[[:space:]#]*# Totals: ' "$f")
	return $seen
}

# mark MESSAGE: note in the kernel log what runs now, so that a guest that
# dies (its console keeps only the kernel log) tells which test it was in.
mark() {
	[ -w /dev/kmsg ] && echo "<5>rdmashare-selftest: $*" >/dev/kmsg
	return 0
}

# Pass the test's output through, marking each test case as it starts (one
# write each: /dev/kmsg rate-limits each opener to 10 lines in 5 s).  A last
# line without its newline (a test that died mid-line) is kept too.
mark_cases() {
	local line name
	while IFS= read -r line || [ -n "$line" ]; do
		printf '%s\n' "$line"
		case $line in
		'#  RUN '*)
			name=${line#\#  RUN }
			name=${name#"${name%%[! ]*}"}
			mark "${name% ...}"
			;;
		esac
	done
}

out=$(mktemp)
if [ -n "$kunit" ]; then
	echo "# kunit: $kunit"
	if insmod "$kunit" >"$out" 2>&1; then
		found=0
		for r in /sys/kernel/debug/kunit/rdmashare_*/results; do
			[ -e "$r" ] || continue
			found=1
			cat "$r"
			cat "$r" >>"$out"
		done
		if [ $found = 0 ] || ! count_totals "$out"; then
			echo "not ok - kunit: no results"
			fail=$((fail + 1))
		fi
		rmmod "$(basename "$kunit" .ko)" || fail=$((fail + 1))
	else
		cat "$out"
		echo "not ok - kunit: insmod failed"
		fail=$((fail + 1))
	fi
fi

for t in "${tests[@]}"; do
	bin=$t
	[ -x "$bin" ] || bin=$here/build/$t
	echo "# selftest: $t"
	mark "$t"
	timeout -k 5 "${RS_TEST_TIMEOUT:-900}" "$bin" 2>&1 | mark_cases >"$out"
	rc=${PIPESTATUS[0]}
	cat "$out"
	if ! count_totals "$out"; then
		echo "not ok - $t: no totals (exit $rc)"
		fail=$((fail + 1))
	elif [ "$rc" -ne 0 ] && ! grep -q ' fail:[1-9]' "$out"; then
		echo "not ok - $t: exit $rc"
		fail=$((fail + 1))
	fi
done
rm -f "$out"

echo "# rdmashare-results: pass:$pass fail:$fail skip:$skip"
[ $fail -eq 0 ] && [ $skip -eq 0 ]
