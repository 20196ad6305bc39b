# Unit tests of the baseline policies (wfbp, mgwfbp: partition/*.c).
$(BUILD)/tests/unit/test_policies_basic: $(BUILD)/obj/tests/unit/partition/test_policies_basic.o $(PLAN_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(PLAN_LIB) $(LDLIBS_JSON) $(LDLIBS_CMOCKA) -lm

UNIT_TESTS += $(BUILD)/tests/unit/test_policies_basic
