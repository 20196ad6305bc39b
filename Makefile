# usbyte: one Makefile, no generated build system.  Each folder adds its own targets in a
# fragment (*/module.mk) using the variables and functions defined here.  See README.md.
#
#   make            build everything into $(BUILD) (build/, or build/san-<list> with SAN=...)
#   make test       build and run every test; non-zero on any failure
#   make test SAN=address,undefined
#   make demo       the main job on the CPU emulator
#   make deps       check and install what the build needs (Debian packages, CUDA headers)
#   make install    PREFIX=/usr/local, DESTDIR=; make uninstall (mk/install.mk)

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

CC ?= cc
OPT ?= -O2
CPPFLAGS := -D_GNU_SOURCE -Iinclude -I$(CUDA_HOME)/include
CFLAGS := -std=c11 $(OPT) -g -fPIC -Wall -Wextra -Werror -fvisibility=hidden -MMD -MP
LDFLAGS :=
ifneq ($(SAN),)
CFLAGS += -fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SAN)
endif
LDLIBS_JSON := -ljansson
LDLIBS_CMOCKA := -lcmocka
LDLIBS_THREAD := -lpthread -ldl -lrt -lm

.DEFAULT_GOAL := all
.PHONY: all test unit-tests deps demo clean FORCE

# Every object depends on the flag set it was built with, so changing SAN/OPT rebuilds.
FLAGS_STAMP := $(BUILD)/.flags
$(FLAGS_STAMP): FORCE
	@mkdir -p $(@D)
	@echo '$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS)' | cmp -s - $@ || echo '$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS)' > $@

$(BUILD)/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# $(call objs, sources...) -> object paths
objs = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

# Fragments append to these.
ALL :=
UNIT_TESTS :=          # cmocka binaries, run by tests/run
INTEGRATION_TESTS :=   # executable scripts, run by tests/run with BUILD exported
DEMO_DEPS :=

# The pure planning code, linked by the tools, the tests and the interposer.
PLAN_SRCS := $(wildcard partition/*.c) $(wildcard order/*.c) $(wildcard profiler/profile_io*.c profiler/plan_io*.c)
PLAN_LIB := $(BUILD)/libusbyte_plan.a
$(PLAN_LIB): $(call objs,$(PLAN_SRCS))
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

ALL += $(PLAN_LIB)

include $(sort $(wildcard */module.mk */*/module.mk */*/*/module.mk))
include mk/install.mk

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
