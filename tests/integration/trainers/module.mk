# The framework-shaped trainers: plain CUDA runtime + NCCL programs built against the real headers
# of $(CUDA_HOME) and linked by soname, so they run on the emulator (LD_LIBRARY_PATH=$(BUILD)/emu,
# which build/emu/emu-run sets) or on a real GPU with the real libraries.
TRAINERS := ddp_like horovod_like per_layer
TRAINER_BINS := $(addprefix $(BUILD)/trainers/,$(TRAINERS))
TRAINER_COMMON_OBJS := $(call objs,tests/integration/trainers/trainer_common.c)
TRAINER_LIBDIR ?= $(BUILD)/emu
# The emulator's libraries (linker names), each a prerequisite once its fragment exists.
TRAINER_EMU_LIBS := $(if $(wildcard tests/emu/module.mk),$(BUILD)/emu/libcudart.so) \
	$(if $(wildcard tests/emu/nccl/module.mk),$(BUILD)/emu/libnccl.so)

$(TRAINER_BINS): $(BUILD)/trainers/%: $(call objs,tests/integration/trainers/%.c) $(TRAINER_COMMON_OBJS) $(PLAN_LIB) | $(if $(filter $(BUILD)/emu,$(TRAINER_LIBDIR)),$(TRAINER_EMU_LIBS))
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) -L$(TRAINER_LIBDIR) -Wl,-rpath-link,$(TRAINER_LIBDIR) \
		-lcudart -lnccl $(LDLIBS_JSON) $(LDLIBS_THREAD)

.PHONY: trainers
trainers: $(TRAINER_BINS)

ifneq ($(wildcard tests/emu/nccl/module.mk),)
ALL += $(TRAINER_BINS)
endif

# The report checker's own test: it passes consistent reports and fails each error it must catch.
INTEGRATION_TESTS += tests/integration/trainers/check_report_test.py

# The trainers' own checks (no usbyte involved): deterministic, consistent, timed as docs/model.md says.
ifneq ($(wildcard tests/emu/nccl/module.mk),)
INTEGRATION_TESTS += tests/integration/trainers/selfcheck.sh
# Interference from the collectives beside a layer delays the later layers too.
INTEGRATION_TESTS += tests/integration/trainers/interference.sh
endif
