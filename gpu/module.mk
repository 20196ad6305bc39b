# The GPU kit's own programs (gpu/*.c): plain CUDA runtime, driver and NCCL programs built against
# $(CUDA_HOME)'s headers and linked by soname, like the trainers, so that they run on the
# emulator's stand-ins here and on the machine's own libraries there.  `make gpu-kit`
# (mk/gpu-kit.mk) gathers them with the rest.
GPU_PROGS := $(addprefix $(BUILD)/gpu/,queues facts smoke curve)
$(BUILD)/obj/gpu/smoke.o $(BUILD)/obj/gpu/curve.o: CPPFLAGS += -Itests/integration

$(BUILD)/gpu/queues: $(call objs,gpu/queues.c) | $(BUILD)/emu/libcuda.so $(BUILD)/emu/libcudart.so
$(BUILD)/gpu/queues: GPU_LIBS := -lcuda -lcudart
$(BUILD)/gpu/facts: $(call objs,gpu/facts.c) | $(BUILD)/emu/libcuda.so $(BUILD)/emu/libcudart.so $(BUILD)/emu/libnccl.so
$(BUILD)/gpu/facts: GPU_LIBS := -lcuda -lcudart -lnccl
$(BUILD)/gpu/smoke: $(call objs,gpu/smoke.c) | $(BUILD)/emu/libcudart.so $(BUILD)/emu/libnccl.so
$(BUILD)/gpu/smoke: GPU_LIBS := -lcudart -lnccl
$(BUILD)/gpu/curve: $(call objs,gpu/curve.c) | $(BUILD)/emu/libcudart.so $(BUILD)/emu/libnccl.so
$(BUILD)/gpu/curve: GPU_LIBS := -lcudart -lnccl
$(GPU_PROGS):
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) -L$(BUILD)/emu -Wl,-rpath-link,$(BUILD)/emu $(GPU_LIBS) $(LDLIBS_THREAD)

ALL += $(GPU_PROGS)

# The kit's tests: its Python compiles and its launcher behaves (gpu_scripts.sh); make gpu-kit and
# the rehearsal on the emulator (gpu_kit.sh).
INTEGRATION_TESTS += tests/integration/gpu_scripts.sh
ifneq ($(wildcard interpose/module.mk),)
INTEGRATION_TESTS += tests/integration/gpu_kit.sh
endif
