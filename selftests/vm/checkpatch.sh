#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# checkpatch.pl --strict over the module, the KUnit tests, the uapi header
# and the benchmark's kernel-QP floor module; any error, warning or check
# fails.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
src=$(rs_ensure_src)
cd "$RS_TOP"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	files=$(git ls-files --cached --others --exclude-standard -- 'kmod/*.[ch]' 'uapi/*.h' \
		'selftests/bench/kqp/*.[ch]')
else
	files=$(find kmod uapi selftests/bench/kqp -name '*.[ch]' ! -name '*.mod.c' | sort)
fi
cp="perl $src/scripts/checkpatch.pl --strict --no-tree --terse --show-types"
# shellcheck disable=SC2086
out=$($cp --ignore FILE_PATH_CHANGES -f $(grep -v '^uapi/\|^kmod/trace\.h$' <<<"$files") 2>&1) || true
# TRACE_EVENT()'s own layout ("TP_STRUCT__entry(" ending a line) is the
# idiom of every trace header in the kernel.
out+=$'\n'$($cp --ignore FILE_PATH_CHANGES,OPEN_ENDED_LINE,PARENTHESIS_ALIGNMENT \
	-f kmod/trace.h 2>&1) || true
# uapi headers cannot use BIT(): (1U << n) is the uapi idiom.
# shellcheck disable=SC2086
out+=$'\n'$($cp --ignore FILE_PATH_CHANGES,BIT_MACRO -f $(grep '^uapi/' <<<"$files") 2>&1) || true
printf '%s\n' "$out"
if grep -v '^total: 0 errors, 0 warnings, 0 checks' <<<"$out" | grep -q .; then
	echo "checkpatch: problems found" >&2
	exit 1
fi
echo "checkpatch: $(wc -w <<<"$files") files clean"
