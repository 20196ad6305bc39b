# Unit tests of the profiler's pure pieces: call signatures, iteration detection, alpha/beta fit.
# Their sources go into libusbyte.so (profiler/module.mk), not into $(PLAN_LIB), so the tests link
# the objects directly.
PROFILER_PURE_TESTS := test_signature test_iteration test_fit
PROFILER_PURE_TEST_BINS := $(patsubst %,$(BUILD)/tests/unit/%,$(PROFILER_PURE_TESTS))

$(BUILD)/tests/unit/test_signature: $(call objs,tests/unit/profiler/test_signature.c profiler/signature.c)
$(BUILD)/tests/unit/test_iteration: $(call objs,tests/unit/profiler/test_iteration.c profiler/iteration.c profiler/signature.c)
$(BUILD)/tests/unit/test_fit: $(call objs,tests/unit/profiler/test_fit.c profiler/fit.c)

$(PROFILER_PURE_TEST_BINS):
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(LDLIBS_CMOCKA) -lm

UNIT_TESTS += $(PROFILER_PURE_TEST_BINS)
