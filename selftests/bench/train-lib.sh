# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Sourced by the two-guest training targets (gloo-train.sh,
# ps-train-pair.sh), after selftests/vm/lib.sh.

# rs_same_weights NAME LOG...: each training log's "weights fnv1a64 HASH"
# line; 0 if every log that has one has the same, which is said, else 1.
rs_same_weights() {
	local name=$1 f h=()
	shift
	for f in "$@"; do
		[ -e "$f" ] && h+=("$(sed -n 's/^weights fnv1a64 //p' "$f")")
	done
	[ "${#h[@]}" -ge 2 ] || return 0
	if [ "$(printf '%s\n' "${h[@]}" | sort -u | wc -l)" = 1 ]; then
		rs_log "$name: the same final weights (fnv1a64 ${h[0]}) over every transport"
		return 0
	fi
	rs_log "$name: the final weights differ between transports: ${h[*]}"
	return 1
}
