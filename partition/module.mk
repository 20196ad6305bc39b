# Unit tests of the evaluator, the profile/plan I/O and the baseline policies (issue 3), and
# the simulator's command-line test.  Kept here, not in tests/unit/module.mk, to avoid
# collisions between helpers editing the same fragment.
PARTITION_TESTS := test_evaluate test_profile_io test_policies_basic
PARTITION_TEST_BINS := $(patsubst %,$(BUILD)/tests/unit/%,$(PARTITION_TESTS))

$(PARTITION_TEST_BINS): $(BUILD)/tests/unit/%: $(BUILD)/obj/tests/unit/%.o $(PLAN_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(PLAN_LIB) $(LDLIBS_JSON) $(LDLIBS_CMOCKA) -lm

UNIT_TESTS += $(PARTITION_TEST_BINS)
INTEGRATION_TESTS += tests/integration/sim_cli.sh
