# The profiler's own tests.  Its sources are built elsewhere: profile_io*.c and plan_io*.c into
# $(PLAN_LIB) (Makefile), the rest into libusbyte.so (interpose/module.mk).
#
# test_atomic_write: ub_write_file_atomic and ub_write_json_atomic (profile_io_atomic.c), linked
# from its object so that the test's own getrandom is the one it calls.
$(BUILD)/tests/unit/test_atomic_write: $(call objs,tests/unit/test_atomic_write.c profiler/profile_io_atomic.c)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(LDLIBS_JSON) $(LDLIBS_CMOCKA)

UNIT_TESTS += $(BUILD)/tests/unit/test_atomic_write

# The runtime's files end to end (log file, report path): tests/integration/runtime_files.sh.
INTEGRATION_TESTS += tests/integration/runtime_files.sh
