# usbyte: one Makefile, no generated build system.  Each folder adds its own targets in a
# fragment (*/module.mk) using the variables and functions defined here.  See README.md.
#
#   make            build everything into $(BUILD) (build/, or build/san-<list> with SAN=...)
#   make test       build and run every test; non-zero on any failure
#   make test SAN=address,undefined
#   make demo       the main job on the CPU emulator
#   make deps       check and install what the build needs (Debian packages, CUDA headers)
#   make install    PREFIX=/usr/local, DESTDIR=; make uninstall; make dist (mk/install.mk)
#   make gpu-kit    build/gpu-kit/, what a GPU machine runs to check usbyte (mk/gpu-kit.mk)

CUDA_HOME ?= /usr/local/cuda
export CUDA_HOME
SAN ?=
comma := ,
ifeq ($(SAN),)
BUILD ?= build
else
BUILD ?= build/san-$(subst $(comma),-,$(SAN))
endif
export BUILD SAN

# nccl.h comes from NCCL_HOME, CUDA_HOME, the nvidia-nccl wheel or /usr/include, whichever has it
# first (mk/find-nccl.sh).  Looked up and said once per top-level make; sub-makes inherit it.
ifndef USBYTE_NCCL_FOUND
USBYTE_NCCL_FOUND := $(shell NCCL_HOME='$(NCCL_HOME)' CUDA_HOME='$(CUDA_HOME)' mk/find-nccl.sh)
ifneq ($(filter-out clean deps,$(or $(MAKECMDGOALS),all)),)
ifneq ($(word 1,$(USBYTE_NCCL_FOUND)),-)
$(info nccl: nccl.h from $(wordlist 3,99,$(USBYTE_NCCL_FOUND)) ($(word 1,$(USBYTE_NCCL_FOUND))), \
	libnccl.so.2 $(if $(filter -,$(word 2,$(USBYTE_NCCL_FOUND))),not beside it (found at run time),in $(word 2,$(USBYTE_NCCL_FOUND))))
endif
endif
endif
export USBYTE_NCCL_FOUND
NCCL_INCDIR := $(filter-out -,$(word 1,$(USBYTE_NCCL_FOUND)))

CC ?= cc
OPT ?= -O2
CPPFLAGS := -D_GNU_SOURCE -Iinclude $(addprefix -I,$(filter-out $(CUDA_HOME)/include,$(NCCL_INCDIR))) -I$(CUDA_HOME)/include
CFLAGS := -std=c11 $(OPT) -g -fPIC -Wall -Wextra -Werror -fvisibility=hidden -MMD -MP
# Installed, the library and the tools find the shared libraries that `make install` carries
# (lib/usbyte/: jansson, libelf) through their RUNPATH: $ORIGIN/../lib/usbyte is PREFIX/lib/usbyte
# from PREFIX/lib and from PREFIX/bin alike.  In the build tree it names nothing, and the system's
# copies are used.
LDFLAGS := -Wl,--enable-new-dtags -Wl,-rpath,'$$ORIGIN/../lib/usbyte'
# DEPS_PREFIX=DIR: jansson, libelf, uthash (and cmocka, for the tests) installed under DIR rather
# than by the system's packages (a build without root; README.md, "Install on a cluster").
ifneq ($(DEPS_PREFIX),)
CPPFLAGS += -I$(DEPS_PREFIX)/include
LDFLAGS += -L$(DEPS_PREFIX)/lib -Wl,-rpath-link,$(DEPS_PREFIX)/lib
export LD_LIBRARY_PATH := $(DEPS_PREFIX)/lib$(if $(LD_LIBRARY_PATH),:$(LD_LIBRARY_PATH))
endif
ifneq ($(SAN),)
CFLAGS += -fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SAN)
endif
LDLIBS_JSON := -ljansson
LDLIBS_CMOCKA := -lcmocka
LDLIBS_THREAD := -lpthread -ldl -lrt -lm

.DEFAULT_GOAL := all
.PHONY: all test unit-tests deps demo clean FORCE

# Every object depends on the flag set it was built with, so changing SAN/OPT rebuilds (and so does
# a change of what a fragment adds to some objects alone, which it names in FLAGS_STAMP_EXTRA).  No
# nccl.h anywhere stops every compilation here, with where it was looked for.
FLAGS_STAMP := $(BUILD)/.flags
FLAGS_STAMP_TEXT = $(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $(FLAGS_STAMP_EXTRA)
$(FLAGS_STAMP): FORCE
	@$(if $(NCCL_INCDIR),true,echo 'nccl.h not found: $(wordlist 3,99,$(USBYTE_NCCL_FOUND)); set NCCL_HOME to an NCCL with include/nccl.h (or install the nvidia-nccl-cu13 wheel)' >&2; false)
	@mkdir -p $(@D)
	@echo '$(FLAGS_STAMP_TEXT)' | cmp -s - $@ || echo '$(FLAGS_STAMP_TEXT)' > $@

$(BUILD)/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# $(call objs, sources...) -> object paths
objs = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

# Fragments append to these.
ALL :=
FLAGS_STAMP_EXTRA :=
UNIT_TESTS :=          # cmocka binaries, run by tests/run
INTEGRATION_TESTS :=   # executable scripts, run by tests/run with BUILD exported
DEMO_DEPS :=

# The pure planning code, linked by the tools, the tests and the interposer.
PLAN_SRCS := $(wildcard partition/*.c) $(wildcard order/*.c) $(wildcard profiler/profile_io*.c profiler/plan_io*.c) profiler/net_table.c profiler/open_regular.c profiler/median.c
PLAN_LIB := $(BUILD)/libusbyte_plan.a
$(PLAN_LIB): $(call objs,$(PLAN_SRCS))
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

ALL += $(PLAN_LIB)

include $(sort $(wildcard */module.mk */*/module.mk */*/*/module.mk))
include mk/install.mk
include mk/gpu-kit.mk

all: $(ALL)

deps:
	@mk/deps.sh

test: deps
	@$(MAKE) --no-print-directory all unit-tests
	@tests/run $(UNIT_TESTS) $(INTEGRATION_TESTS)

unit-tests: $(UNIT_TESTS)

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
