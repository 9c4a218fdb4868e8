# ptshare: one entry point for the harness, one line per target. Each target
# runs a script of scripts/ (named in brackets) whose header lists its options.
#   make bench [QUICK=1]      build vanilla and ptshare, benchmark both, report [bench.sh]
#   make native-bench         the suite on the running kernel, no QEMU; QUICK=1 [native-bench.sh]
#   make test [FLAVOUR=debug] selftests and our tests in QEMU, judged against vanilla [check.sh]
#   make baseline             the selftests and observe on vanilla -> baseline/ [baseline.sh]
#   make kernel FLAVOUR=x     build one kernel: vanilla, ptshare or debug [build-kernel.sh]
#   make cross                compile build/linux for i386, m68k, x86_64, PTSHARE=n [cross-build.sh]
#   make shell FLAVOUR=x      boot a kernel with an interactive shell [run-guest.sh -i]
#   make fuzz SEEDS=N         the differential fuzzer in QEMU for N seeds [fuzz.sh]
#   make soak MINUTES=N       fork/exec storm, swapping workers and the fuzzer [soak.sh]
#   make export               build/linux commits -> patches/, cover letter, checkpatch [export.sh]
#   make tree                 (re)create build/linux from patches/ [tree.sh]
#   make check-prefixes       every prefix of the series builds (FROM=k: from patch k) [check-prefixes.sh]
#   make help                 this list
# make test: the selftests run with vm.pt_share=2 (PT_SHARE=0|1 for the other
# modes, PT_SHARE_SHARED=1|2 to share shared mappings too), then a slice on
# the debug kernel (DEBUG_ONLY); docs/testing.md and docs/benchmarks.md.
FLAVOUR ?= ptshare
PT_SHARE ?= 2
QUICK ?= 0
SEEDS ?= 10
MINUTES ?= 10

bench:
	QUICK=$(QUICK) KERNELS="$(KERNELS)" scripts/bench.sh

native-bench:
	QUICK=$(QUICK) NAME="$(NAME)" CPUS="$(CPUS)" scripts/native-bench.sh

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

check-prefixes:
	scripts/deps.sh
	FROM="$(FROM)" TO="$(TO)" scripts/check-prefixes.sh

# The comment at the top of this file, without its '#', then any target
# that has no line there.
help:
	@sed -n '/^[^#]/q; s/^# \{0,1\}//p' Makefile
	@sed -n 's/^\([a-z][a-z0-9-]*\):.*/\1/p' Makefile | while read -r t; do \
		grep -q "^#   make $$t\( \|$$\)" Makefile || echo "make $$t: not described above"; \
	done

.PHONY: bench native-bench test baseline kernel cross shell fuzz soak export tree check-prefixes help
