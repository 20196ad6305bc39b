# Unit tests of the advanced policies (bytescheduler, usbyte, best), the reference policies (ddp,
# horovod), the exhaustive oracle and the property tests, and the merge regions' order (sources in tests/unit/order/).  The
# oracle is test code and links only into test_oracle.
ORDER_TESTS := test_policies_advanced test_policies_reference test_oracle test_properties
ORDER_TESTS += test_regions
# The evaluator (evaluate.c): the model's iteration time, validity and cut rules.
ORDER_TESTS += test_evaluate
ORDER_TEST_BINS := $(patsubst %,$(BUILD)/tests/unit/%,$(ORDER_TESTS))

$(BUILD)/tests/unit/test_oracle: $(BUILD)/obj/tests/unit/order/oracle.o

$(ORDER_TEST_BINS): $(BUILD)/tests/unit/%: $(BUILD)/obj/tests/unit/order/%.o $(PLAN_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(PLAN_LIB) $(LDLIBS_JSON) $(LDLIBS_CMOCKA) -lm

UNIT_TESTS += $(ORDER_TEST_BINS)

# The cost function, its fit and the bound under a curve (test_cost_model): with the oracle and
# the fit's objects (profiler/fit.c and fit_model.c are not in $(PLAN_LIB)).
$(BUILD)/tests/unit/test_cost_model: $(BUILD)/obj/tests/unit/order/test_cost_model.o $(BUILD)/obj/tests/unit/order/oracle.o \
		$(call objs,profiler/fit.c profiler/fit_model.c) $(PLAN_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(PLAN_LIB) $(LDLIBS_JSON) $(LDLIBS_CMOCKA) -lm

UNIT_TESTS += $(BUILD)/tests/unit/test_cost_model
