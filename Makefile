# ptshare: one entry point for the harness. Everything is in scripts/.
#   make bench              build vanilla and ptshare, benchmark both, report
#   make bench QUICK=1      a subset, for a first look
#   make test               build the ptshare kernel, run selftests + own tests;
#                           the selftests with vm.pt_share=2, every eligible
#                           table shared (PT_SHARE=0|1 for the other modes,
#                           PT_SHARE_SHARED=1 or 2 to share shared mappings too),
#                           the own tests and the fuzzer force vm.pt_share=2;
#                           then a slice on the debug kernel (DEBUG_ONLY=...,
#                           DEBUG_ONLY= to skip it)
#   make test FLAVOUR=debug the whole suite on the debug kernel
#   make baseline           run the selftests and tests/ptshare/observe on
#                           vanilla, rewrite baseline/
#   make kernel FLAVOUR=x   build one kernel (vanilla, ptshare, debug)
#   make cross              compile build/linux's HEAD for i386, m68k and
#                           x86_64 with PTSHARE=n (CROSS_ARCHS="... sh")
#   make shell FLAVOUR=x    boot a kernel with an interactive shell
#   make fuzz SEEDS=N       the differential fuzzer in QEMU for N seeds
#                           (FUZZ_SEED0, FUZZ_OPS; FLAVOUR=vanilla to compare)
#   make soak MINUTES=N     N minutes of fork/exec storm, swapping memory
#                           workers and the fuzzer (SOAK_FAIL=PCT injects
#                           unshare allocation failures)
#   make export             export build/linux commits into patches/
#   make tree               (re)create build/linux from patches/
#   make help               this list
FLAVOUR ?= ptshare
PT_SHARE ?= 2
QUICK ?= 0
SEEDS ?= 10
MINUTES ?= 10

bench:
	QUICK=$(QUICK) KERNELS="$(KERNELS)" scripts/bench.sh

test:
	FLAVOUR=$(FLAVOUR) PT_SHARE=$(PT_SHARE) scripts/check.sh

baseline:
	scripts/baseline.sh

kernel:
	scripts/deps.sh
	scripts/build-kernel.sh $(FLAVOUR)

cross:
	scripts/deps.sh
	CROSS_ARCHS="$(CROSS_ARCHS)" scripts/cross-build.sh

shell: kernel
	scripts/build-selftests.sh
	$(MAKE) -s -C tests/ptshare OUT=$(CURDIR)/build/ptshare-tests
	scripts/mkrootfs.sh
	scripts/run-guest.sh -i -k $(FLAVOUR)

fuzz:
	FLAVOUR=$(FLAVOUR) SEEDS=$(SEEDS) scripts/fuzz.sh

soak:
	FLAVOUR=$(FLAVOUR) MINUTES=$(MINUTES) scripts/soak.sh

export:
	scripts/export.sh

tree:
	scripts/deps.sh
	scripts/tree.sh

# The comment at the top of this file, without its '#'.
help:
	@sed -n '/^[^#]/q; s/^# \{0,1\}//p' Makefile

.PHONY: bench test baseline kernel cross shell fuzz soak export tree help
