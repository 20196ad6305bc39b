# The profiler's own tests.  Its sources are built elsewhere: profile_io*.c and plan_io*.c into
# $(PLAN_LIB) (Makefile), the rest into libusbyte.so (interpose/module.mk, which defines
# RUNTIME_PROFILER_SRCS before this fragment is read).
#
# The pure pieces, linked from their objects: call signatures (signature.c), iteration detection
# (iteration.c), the alpha/beta fit (fit.c), the verification's pieces (verify.c), the data/net/
# table reader (net_table.c).  Their sources are in tests/unit/profiler/.
PROFILER_PURE_TESTS := test_signature test_iteration test_fit test_verify test_net_table
PROFILER_PURE_TEST_BINS := $(patsubst %,$(BUILD)/tests/unit/%,$(PROFILER_PURE_TESTS))

$(BUILD)/tests/unit/test_signature: $(call objs,tests/unit/profiler/test_signature.c profiler/signature.c)
$(BUILD)/tests/unit/test_iteration: $(call objs,tests/unit/profiler/test_iteration.c profiler/iteration.c profiler/signature.c)
$(BUILD)/tests/unit/test_fit: $(call objs,tests/unit/profiler/test_fit.c profiler/fit.c profiler/median.c)
$(BUILD)/tests/unit/test_verify: $(call objs,tests/unit/profiler/test_verify.c profiler/verify.c profiler/median.c)
$(BUILD)/tests/unit/test_net_table: $(call objs,tests/unit/profiler/test_net_table.c profiler/net_table.c profiler/open_regular.c)

$(PROFILER_PURE_TEST_BINS):
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(LDLIBS_CMOCKA) -lm

UNIT_TESTS += $(PROFILER_PURE_TEST_BINS)

# The profile and plan files (profile_io.c, plan_io.c).
$(BUILD)/tests/unit/test_profile_io: $(BUILD)/obj/tests/unit/profiler/test_profile_io.o $(PLAN_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(PLAN_LIB) $(LDLIBS_JSON) $(LDLIBS_CMOCKA) -lm

UNIT_TESTS += $(BUILD)/tests/unit/test_profile_io

# test_atomic_write: ub_write_file_atomic and ub_write_json_atomic (profile_io_atomic.c), linked
# from its object so that the test's own getrandom is the one it calls.
$(BUILD)/tests/unit/test_atomic_write: $(call objs,tests/unit/profiler/test_atomic_write.c profiler/profile_io_atomic.c)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(LDLIBS_JSON) $(LDLIBS_CMOCKA)

UNIT_TESTS += $(BUILD)/tests/unit/test_atomic_write

# The runtime's profiler pieces with the configuration they read: the agreement's encoding
# (agree.c), the profile derivation (derive.c), the schedule's cursor tables (schedule.c) and the
# report (report.c, with the agreement's mismatch text).
ifneq ($(wildcard interpose/module.mk),)
PROFILER_RT_TESTS := test_agree test_derive test_schedule test_report_runtime
PROFILER_RT_TEST_BINS := $(patsubst %,$(BUILD)/tests/unit/%,$(PROFILER_RT_TESTS))
$(PROFILER_RT_TEST_BINS): $(BUILD)/tests/unit/%: $(BUILD)/obj/tests/unit/profiler/%.o \
		$(call objs,interpose/config.c $(RUNTIME_PROFILER_SRCS)) $(PLAN_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(PLAN_LIB) $(LDLIBS_JSON) $(LDLIBS_CMOCKA) -lm

UNIT_TESTS += $(PROFILER_RT_TEST_BINS)
endif

# Calibration's pure pieces (calibrate.c), with the fit and the planning library they use.
$(BUILD)/tests/unit/test_calibrate: $(call objs,tests/unit/profiler/test_calibrate.c profiler/calibrate.c profiler/median.c \
		profiler/fit_model.c profiler/fit.c) $(PLAN_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(PLAN_LIB) $(LDLIBS_CMOCKA) -lm

UNIT_TESTS += $(BUILD)/tests/unit/test_calibrate
