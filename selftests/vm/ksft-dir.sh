#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Print the directory holding kselftest_harness.h (from Debian's
# linux-source-6.12, unpacked once into the cache).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
src=$(rs_ensure_src)
printf '%s/tools/testing/selftests\n' "$src"
