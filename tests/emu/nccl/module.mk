# The emulated NCCL (libnccl.so.2), its unit tests, and the multi-rank integration tests that run
# through the launcher (tests/emu/launcher).  See docs/emulator-nccl.md.

# The data/net/ table reader is usbyte-sim's too (profiler/net_table.c profiler/open_regular.c): one reader of the format.
EMU_NCCL_SRCS := $(filter-out tests/emu/nccl/unit/%,$(wildcard tests/emu/nccl/*.c)) profiler/net_table.c profiler/open_regular.c
EMU_NCCL_LIB := $(BUILD)/emu/libnccl.so.2
EMU_CUDART_LIB := $(BUILD)/emu/libcudart.so.13

# libnccl needs the emulator's private entry points of libcudart (emu_internal.h).  Until the
# cudart stand-in has a build rule, the library links without it (unresolved symbols of a shared
# library are allowed; the program's libcudart provides them at run time).
ifneq ($(wildcard tests/emu/module.mk),)
EMU_NCCL_CUDART_DEP := $(EMU_CUDART_LIB)
EMU_NCCL_CUDART_LINK := -L$(BUILD)/emu -l:libcudart.so.13 -Wl,--no-undefined
endif

$(EMU_NCCL_LIB): $(call objs,$(EMU_NCCL_SRCS)) $(EMU_NCCL_CUDART_DEP)
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libnccl.so.2 $(LDFLAGS) -o $@ $(call objs,$(EMU_NCCL_SRCS)) $(EMU_NCCL_CUDART_LINK) -lpthread -lrt -lm

$(BUILD)/emu/libnccl.so: $(EMU_NCCL_LIB)
	ln -sf libnccl.so.2 $@

ALL += $(EMU_NCCL_LIB) $(BUILD)/emu/libnccl.so

# Unit tests of the pure parts (time model, arithmetic, signatures).
$(BUILD)/tests/unit/test_emu_nccl: $(call objs,tests/emu/nccl/unit/test_emu_nccl.c tests/emu/nccl/model.c profiler/net_table.c profiler/open_regular.c tests/emu/nccl/dtype.c tests/emu/nccl/errors.c)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_CMOCKA) -lm

UNIT_TESTS += $(BUILD)/tests/unit/test_emu_nccl

# The measured network's table and the jitter factor (model.c).
$(BUILD)/tests/unit/test_emu_net: $(call objs,tests/emu/nccl/unit/test_emu_net.c tests/emu/nccl/model.c profiler/net_table.c profiler/open_regular.c)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_CMOCKA) -lpthread -lm

UNIT_TESTS += $(BUILD)/tests/unit/test_emu_net

# Multi-rank test programs: ordinary CUDA/NCCL programs linked against the stand-ins.
EMU_IT_PROGS := $(patsubst tests/emu/integration/%.c,$(BUILD)/tests/emu/integration/%,$(wildcard tests/emu/integration/emu_*.c))
EMU_IT_SCRIPTS := $(wildcard tests/emu/integration/emu_*.sh)

ifneq ($(wildcard tests/emu/module.mk),)
$(EMU_IT_PROGS): $(BUILD)/tests/emu/integration/%: $(BUILD)/obj/tests/emu/integration/%.o $(EMU_NCCL_LIB) $(BUILD)/emu/libnccl.so $(EMU_CUDART_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< -L$(BUILD)/emu -lnccl -l:libcudart.so.13 -ldl -lpthread -lm
.SECONDARY: $(call objs,$(wildcard tests/emu/integration/emu_*.c))

ALL += $(EMU_IT_PROGS)
INTEGRATION_TESTS += $(EMU_IT_SCRIPTS)
endif
