# The LD_PRELOAD runtime, build/libusbyte.so, its unit tests, its own integration
# tests and `make bench-overhead`.
#
# The profiler pieces linked into the runtime: signatures, iteration detection and the cost fit,
# the warm-up recorder, the agreement encoding, the profile derivation and the report
# (profile_io/plan_io belong to $(PLAN_LIB)).  Defined here, not in profiler/, because fragments
# are included in name order and prerequisites are expanded when read.
RUNTIME_PROFILER_SRCS := $(filter-out profiler/profile_io%.c profiler/plan_io%.c,$(wildcard profiler/*.c))
INTERPOSE_SRCS := $(wildcard interpose/*.c)
USBYTE_SO := $(BUILD)/libusbyte.so

# The version script, preprocessed from its template and the X-lists of wrapped CUDA runtime and
# driver functions (cuda_xlist.h, driver_xlist.h): every entry whose class is not CALLONLY.
# -undef: no predefined macro (linux, unix) can touch the names.
USBYTE_MAP := $(BUILD)/libusbyte.map
$(USBYTE_MAP): interpose/libusbyte.map.in interpose/cuda_xlist.h interpose/driver_xlist.h
	@mkdir -p $(@D)
	$(CC) -E -P -undef -x c -o $@ $<

$(USBYTE_SO): $(call objs,$(INTERPOSE_SRCS) $(RUNTIME_PROFILER_SRCS)) $(PLAN_LIB) $(USBYTE_MAP)
	@mkdir -p $(@D)
	$(CC) -shared -Wl,--version-script=$(USBYTE_MAP) -Wl,--no-undefined $(LDFLAGS) -o $@ \
		$(filter %.o,$^) $(PLAN_LIB) $(LDLIBS_JSON) $(LDLIBS_THREAD)

ALL += $(USBYTE_SO)
DEMO_DEPS += $(USBYTE_SO)

# Unit tests of the runtime's own files: the configuration (config.c).
$(BUILD)/tests/unit/test_config: $(call objs,tests/unit/interpose/test_config.c interpose/config.c) $(PLAN_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(PLAN_LIB) $(LDLIBS_JSON) $(LDLIBS_CMOCKA) -lm

UNIT_TESTS += $(BUILD)/tests/unit/test_config
# The thread's NCCL groups (group.c), with the bottom tier it uses and fake real NCCL functions.
$(BUILD)/tests/unit/test_group: $(call objs,tests/unit/interpose/test_group.c interpose/group.c interpose/guard.c \
		interpose/log.c interpose/globals.c interpose/config.c) $(PLAN_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(PLAN_LIB) $(LDLIBS_JSON) $(LDLIBS_CMOCKA) -lpthread -lm

UNIT_TESTS += $(BUILD)/tests/unit/test_group
# The redirection's stream list and pending-event table (redirect.c) on the real tables (tables.c),
# with fake real CUDA functions.
$(BUILD)/tests/unit/test_redirect: $(call objs,tests/unit/interpose/test_redirect.c interpose/redirect.c interpose/capture.c \
		interpose/tables.c interpose/guard.c interpose/log.c interpose/globals.c interpose/config.c \
		interpose/cuda_error.c $(RUNTIME_PROFILER_SRCS)) $(PLAN_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(PLAN_LIB) $(LDLIBS_JSON) $(LDLIBS_CMOCKA) -lpthread -lm

UNIT_TESTS += $(BUILD)/tests/unit/test_redirect
# The tables' note of a communicator that passes its calls through and their answer on a
# collective's way in (tables.c), with the capture table, the bottom tier and the profiler pieces a
# record uses.
$(BUILD)/tests/unit/test_tables: $(call objs,tests/unit/interpose/test_tables.c interpose/tables.c interpose/capture.c interpose/guard.c \
		interpose/log.c interpose/globals.c interpose/config.c interpose/cuda_error.c $(RUNTIME_PROFILER_SRCS)) $(PLAN_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(PLAN_LIB) $(LDLIBS_JSON) $(LDLIBS_CMOCKA) -lpthread -lm

UNIT_TESTS += $(BUILD)/tests/unit/test_tables
# The runtime end to end on the emulator: modes, readiness, schedule mode, pending events, several
# communicators, aborts, its files (log file, report path); and the trainers under it, observe
# mode checked against their truth, schedule mode bit-identical (observe_*.sh, schedule_*.sh).
INTEGRATION_TESTS += tests/integration/runtime_files.sh
OBSERVE_TESTS := $(sort $(wildcard tests/integration/observe_*.sh tests/integration/schedule_*.sh))
INTEGRATION_TESTS += $(OBSERVE_TESTS)
INTEGRATION_TESTS += tests/integration/runtime_modes.sh tests/integration/runtime_ready.sh tests/integration/runtime_sched.sh tests/integration/runtime_pending.sh tests/integration/runtime_comms.sh tests/integration/runtime_abort.sh tests/integration/runtime_one_queue.sh tests/integration/runtime_devices.sh \
	tests/integration/runtime_config_ranks.sh tests/integration/runtime_verify.sh tests/integration/runtime_verify_pass.sh \
	tests/integration/runtime_calibrate.sh tests/integration/runtime_refit.sh

# make bench-overhead: host ns per intercepted call (tests/bench/overhead.sh).
$(BUILD)/tests/bench/overhead: $(call objs,tests/bench/overhead.c) | $(BUILD)/emu/libnccl.so $(BUILD)/emu/libcudart.so
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) -L$(BUILD)/emu -lnccl -lcudart $(LDLIBS_THREAD)

$(BUILD)/tests/bench/calls: $(call objs,tests/bench/calls.c) | $(BUILD)/emu/libnccl.so $(BUILD)/emu/libcudart.so
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) -L$(BUILD)/emu -lnccl -lcudart $(LDLIBS_THREAD)

.PHONY: bench-overhead
bench-overhead: $(USBYTE_SO) $(BUILD)/tests/bench/overhead $(BUILD)/tests/bench/calls $(BUILD)/emu/emu-run
	BUILD=$(BUILD) SAN=$(SAN) tests/bench/overhead.sh

# The runtime's own multi-rank test programs (tests/integration/runtime_*.c), linked like any
# CUDA/NCCL program against the emulator's stand-ins.
RUNTIME_IT_PROGS := $(patsubst tests/integration/%.c,$(BUILD)/tests/integration/%,$(wildcard tests/integration/runtime_*.c))
$(RUNTIME_IT_PROGS): $(BUILD)/tests/integration/%: $(BUILD)/obj/tests/integration/%.o | $(BUILD)/emu/libnccl.so $(BUILD)/emu/libcudart.so $(BUILD)/emu/libcuda.so
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< -L$(BUILD)/emu -lnccl -lcudart -lcuda $(LDLIBS_THREAD)
ALL += $(RUNTIME_IT_PROGS)

# make bench-schedule: measured vs predicted speedups of schedule mode (tests/bench/schedule.py,
# writes docs/bench-schedule.md).
.PHONY: bench-schedule
bench-schedule: $(USBYTE_SO) $(BUILD)/emu/emu-run $(addprefix $(BUILD)/trainers/,ddp_like horovod_like per_layer)
	BUILD=$(BUILD) python3 tests/bench/schedule.py docs/bench-schedule.md
