# SPDX-License-Identifier: GPL-2.0
#
# rdmashare top-level Makefile.
#
#   make                  module + user library + selftests
#   make KDIR=<dir>       build the module against another kernel tree
#   make deps             install build/test dependencies (apt)
#   make check            the full test suite (see Documentation/testing.rst)
#   make demo             boot two guests and show rdmashare working
#   make bench            the benchmarks (Documentation/benchmarks.rst); not
#                         part of make check; expects make done
#   make bench-transport  rdmashare vs perftest, the kernel-QP floor (two
#                         kernel RC QPs; builds rs_kqp_floor.ko for the
#                         guest's kernel), RDS, rsocket and TCP
#   make bench-sockets    unmodified programs (iperf3, sockperf, redis) under
#                         rdmashare-run vs TCP, rsocket and its preload
#   make bench-sched      rdmashare's scheduler vs a mutex-shared verbs QP and
#                         a QP per sender: throughput, shares, latency; also
#                         expects make -C selftests bench
#   make bench-ps         libps's ps-bench (ps-lite's benchmark) over TCP, raw
#                         verbs (a QP per connection), rsocket's preload,
#                         rdmashare and rdmashare-run, in one 6.12 guest and
#                         between two 6.1 guests: goodput, ratios, latency,
#                         QPs; expects the 6.1 module in build/6.1 too
#   make gloo-train       PyTorch's gloo trains ps-train's MLP between two
#                         guests over TCP and under rdmashare-run: accuracy
#                         and seconds per epoch (RS_GLOO_EPOCHS, ...; see
#                         Documentation/parameter-server.rst); expects make
#                         done
#   make ps-train-pair    ps-train's MLP on all of Fashion-MNIST, 2 servers and
#                         2 workers across two guests, over TCP, raw verbs,
#                         rsocket, rdmashare and rdmashare-run: accuracy,
#                         seconds per epoch, QPs, the same final weights
#                         (RS_PS_EPOCHS, ...; Documentation/parameter-server.rst)
#   make scale            16,384 ACs on one QP (16 processes x 1024 ACs), every
#                         message checked, on the debug kernel; slab per AC
#   make pingpong-trace   a 64 B ping-pong's time by stage (function tracer),
#                         rdmashare against ib_send_lat; expects make done
#   make fuzz             the ABI fuzzer long (10^6 calls on stock 6.12, 10^5
#                         on the debug kernel) with a random seed
#                         (RS_FUZZ_SEED to repeat one); not part of make check
#   make soak             30 minutes of the two-guest soak on the debug kernel
#                         (RS_SOAK_SECS); make check runs 2
#   make rxe-repro        the stock 6.12 two-guest fault without rdmashare,
#                         10 rounds (Documentation/testing.rst)
#   make modules_install  install rdmashare.ko into /lib/modules/<kver>/extra
#   make dkms-install     the module's sources into /usr/src/rdmashare-<ver>,
#                         then dkms add, build and install for every kernel
#                         with headers (dkms-uninstall undoes it)
#   make install          librdmashare, headers, pkg-config file, the
#                         rdmashare tool, man pages, udev rule, modprobe.d
#                         and modules-load.d files (PREFIX, LIBDIR, DESTDIR,
#                         SYSCONFDIR); make uninstall removes them

# Kernel to build against: the running kernel's build tree when it exists,
# otherwise the newest installed Debian headers.
ifeq ($(origin KDIR),undefined)
KDIR_RUNNING := /lib/modules/$(shell uname -r)/build
ifneq ($(wildcard $(KDIR_RUNNING)/Makefile),)
KDIR := $(KDIR_RUNNING)
KDIR_WHY := the running kernel
else
KDIR := $(lastword $(shell ls -d /usr/src/linux-headers-*/ 2>/dev/null | \
	grep -v -- '-common/$$' | sed 's:/$$::' | sort -V))
KDIR_WHY := newest installed headers; $(KDIR_RUNNING) does not exist
endif
else
KDIR_WHY := KDIR given
endif

TOP := $(CURDIR)
VERSION := $(shell sed -n 's/^VERSION := //p' $(TOP)/userlib/Makefile)
SYSCONFDIR ?= /etc
DESTDIR ?=
DKMS_SRC = $(DESTDIR)/usr/src/rdmashare-$(VERSION)
# The files install puts under SYSCONFDIR, and where they come from.
ETC_FILES := udev/rules.d/60-rdmashare.rules:60-rdmashare.rules \
	modprobe.d/rdmashare.conf:rdmashare-modprobe.conf \
	modules-load.d/rdmashare.conf:rdmashare-modules-load.conf

.PHONY: all module userlib selftests clean deps check demo \
	modules_install install uninstall dkms-src dkms-install dkms-uninstall \
	kdir-check bench bench-transport bench-sockets bench-sched bench-ps gloo-train ps-train-pair pingpong-trace fuzz soak scale rxe-repro

all: module userlib selftests

kdir-check:
	@if [ -z "$(KDIR)" ] || [ ! -e "$(KDIR)/Makefile" ]; then \
		echo "rdmashare: no kernel build tree found (KDIR='$(KDIR)')." >&2; \
		echo "rdmashare: install headers (make deps) or pass KDIR=<dir>." >&2; \
		exit 1; \
	fi
	@echo "rdmashare: building against $(KDIR) ($(KDIR_WHY))"

module: kdir-check
	$(MAKE) -C $(KDIR) M=$(TOP) modules

modules_install: kdir-check
	$(MAKE) -C $(KDIR) M=$(TOP) modules_install

userlib:
	$(MAKE) -C userlib

selftests: userlib
	$(MAKE) -C selftests

install: userlib
	$(MAKE) -C userlib install
	@set -e; for f in $(ETC_FILES); do \
		install -D -m 644 packaging/$${f#*:} $(DESTDIR)$(SYSCONFDIR)/$${f%%:*}; \
	done

uninstall:
	$(MAKE) -C userlib uninstall
	@for f in $(ETC_FILES); do rm -f $(DESTDIR)$(SYSCONFDIR)/$${f%%:*}; done

# The module's sources, as DKMS wants them: no build artefacts.
dkms-src:
	rm -rf $(DKMS_SRC)
	install -d $(DKMS_SRC)
	find Kbuild dkms.conf kmod uapi \( -name '*.[ch]' -o -name Kbuild -o -name dkms.conf \) ! -name '*.mod.c' \
		-print0 | cpio -0 -pdm --quiet $(DKMS_SRC)

# Every kernel that has headers (its /lib/modules/<kver>/build) gets it.
dkms-install: dkms-src
	dkms add rdmashare/$(VERSION)
	@set -e; for k in /lib/modules/*; do \
		[ -e $$k/build/Makefile ] || continue; \
		dkms install rdmashare/$(VERSION) -k $${k##*/}; \
	done

dkms-uninstall:
	-dkms remove rdmashare/$(VERSION) --all
	rm -rf $(DKMS_SRC)

deps:
	bash selftests/vm/deps.sh

check:
	bash selftests/vm/check.sh

demo:
	bash selftests/vm/demo.sh

fuzz:
	bash selftests/vm/fuzz.sh

soak:
	bash selftests/vm/soak.sh

scale:
	bash selftests/vm/scale.sh

rxe-repro:
	bash selftests/vm/rxe-repro.sh

# Every benchmark is a bench-<name> target and a prerequisite of bench.
bench: bench-transport bench-sockets bench-sched bench-ps

bench-transport:
	bash selftests/bench/transport.sh

bench-sockets:
	bash selftests/bench/sockets.sh

bench-sched:
	bash selftests/bench/sched.sh

bench-ps:
	bash selftests/bench/ps.sh

pingpong-trace:
	bash selftests/bench/pingpong-trace.sh

gloo-train:
	bash selftests/bench/gloo-train.sh

ps-train-pair:
	bash selftests/bench/ps-train-pair.sh

clean:
	-[ -n "$(KDIR)" ] && [ -e "$(KDIR)/Makefile" ] && \
		$(MAKE) -C $(KDIR) M=$(TOP) clean
	$(MAKE) -C userlib clean
	$(MAKE) -C selftests clean
