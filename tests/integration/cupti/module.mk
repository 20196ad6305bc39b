# usbyte and CUPTI (docs/runtime.md, "CUPTI"): every way work reaches a stream is in the
# watcher's list (test_cupti_work) and is seen on the NCCL stream (cupti_work.sh); libcupti is
# found where the process has it (cupti_find.sh); an application's own CUPTI subscription gets
# CUPTI, and the verdict says what it cost (cupti_profiler.sh).
$(eval $(call emu_unit_test,test_cupti_work,cudart cuda cupti,tests/unit/interpose))

CUPTI_IT_DIR := $(BUILD)/tests/integration/cupti
CUPTI_IT_LIBS := $(addprefix $(BUILD)/emu/,libnccl.so libcudart.so libcuda.so libcupti.so)
$(CUPTI_IT_DIR)/cupti_work: LINK_CUPTI_IT := -lnccl -lcuda -lcudart
$(CUPTI_IT_DIR)/cupti_profiler: LINK_CUPTI_IT := -lnccl -lcupti -lcudart
$(CUPTI_IT_DIR)/%: $(BUILD)/obj/tests/integration/cupti/%.o | $(CUPTI_IT_LIBS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< -L$(BUILD)/emu $(LINK_CUPTI_IT) $(LDLIBS_THREAD)

ALL += $(CUPTI_IT_DIR)/cupti_work $(CUPTI_IT_DIR)/cupti_profiler
INTEGRATION_TESTS += tests/integration/cupti/cupti_work.sh tests/integration/cupti/cupti_find.sh \
	tests/integration/cupti/cupti_profiler.sh
