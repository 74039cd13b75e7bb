#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The examples of Documentation/admin-guide.rst and rdmashare(8), from the
# real tool: run in a guest,
#   selftests/vm/run-vm.sh --kernel 6.12 --module build/6.12/kmod/rdmashare.ko \
#       -- selftests/vm/admin-examples.sh > out.txt
# then selftests/vm/update-examples.py out.txt puts it into both documents.
# A stream of 4 KiB messages on two ACs to the guest itself; the tool's
# status and rates while it runs, ib_core's view of the verbs objects,
# then the tunables and a refused value.

set -u
bin=$(cd "$(dirname "$0")/../../userlib/build" && pwd)
"$bin/rs-stream" -s -p 7990 -a 2 >/dev/null 2>&1 &
sleep 1
"$bin/rs-stream" -c "$RS_IP" -p 7990 -a 2 -l 4096 -n 20000 >/dev/null 2>&1 &
sleep 3
echo "# rdmashare status"; "$bin/rdmashare" status
echo "# rdmashare stats -w 2 -c 1"; "$bin/rdmashare" stats -w 2 -c 1
echo "# rdmashare --json status"; "$bin/rdmashare" --json status
echo "# cat /sys/kernel/debug/rdmashare/peers/$RS_IP"
cat "/sys/kernel/debug/rdmashare/peers/$RS_IP"
echo "# rdma resource show qp"; rdma resource show qp
echo "# rdma resource show cq"; rdma resource show cq
wait
echo "# rdmashare get"; "$bin/rdmashare" get
echo "# rdmashare set sched_mode flat"; "$bin/rdmashare" set sched_mode flat
echo "# rdmashare set qps_per_peer 99"; "$bin/rdmashare" set qps_per_peer 99
echo "exit status $?"
echo "# rdmashare stats"; "$bin/rdmashare" stats
