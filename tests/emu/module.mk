# The CPU emulator's CUDA runtime, driver and CUPTI stand-ins (tests/emu/cudart, cuda, cupti),
# built into $(BUILD)/emu with the real sonames and symbol versions.  The NCCL stand-in and the
# launcher have their own fragment (tests/emu/nccl/module.mk).
EMU_DIR := $(BUILD)/emu

EMU_CUDART_SRCS := $(wildcard tests/emu/cudart/*.c)
EMU_CUDART := $(EMU_DIR)/libcudart.so.13
$(EMU_CUDART): $(call objs,$(EMU_CUDART_SRCS)) tests/emu/cudart/libcudart.map
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libcudart.so.13 -Wl,--version-script=tests/emu/cudart/libcudart.map \
		-Wl,--no-undefined $(LDFLAGS) -o $@ $(filter %.o,$^) $(LDLIBS_THREAD)
$(EMU_DIR)/libcudart.so: $(EMU_CUDART)
	ln -sf libcudart.so.13 $@

ALL += $(EMU_CUDART) $(EMU_DIR)/libcudart.so

# The driver's version script exports exactly the functions of tests/emu/cuda/exports.h (the list
# cuGetProcAddress's table is made from).  -Bsymbolic-functions binds the library's references to
# its own functions locally, as the real driver's are: the pointers cuGetProcAddress returns are
# its own functions even when an LD_PRELOAD library defines the same names.
EMU_CUDA_SRCS := $(wildcard tests/emu/cuda/*.c)
EMU_CUDA_MAP := $(EMU_DIR)/libcuda.map
EMU_CUDA_LDFLAGS := -Wl,-soname,libcuda.so.1 -Wl,--version-script=$(EMU_CUDA_MAP) -Wl,-Bsymbolic-functions
$(EMU_CUDA_MAP): tests/emu/cuda/libcuda.map.in tests/emu/cuda/exports.h
	@mkdir -p $(@D)
	$(CC) -E -P -x c -o $@ $<
EMU_CUDA := $(EMU_DIR)/libcuda.so.1
$(EMU_CUDA): $(call objs,$(EMU_CUDA_SRCS)) $(EMU_CUDA_MAP) $(EMU_DIR)/libcudart.so
	$(CC) -shared $(EMU_CUDA_LDFLAGS) \
		-Wl,--no-undefined $(LDFLAGS) -o $@ $(filter %.o,$^) -L$(EMU_DIR) -lcudart $(LDLIBS_THREAD)
$(EMU_DIR)/libcuda.so: $(EMU_CUDA)
	ln -sf libcuda.so.1 $@

ALL += $(EMU_CUDA) $(EMU_DIR)/libcuda.so

EMU_CUPTI_SRCS := $(wildcard tests/emu/cupti/*.c)
EMU_CUPTI := $(EMU_DIR)/libcupti.so.13
$(EMU_CUPTI): $(call objs,$(EMU_CUPTI_SRCS)) tests/emu/cupti/libcupti.map $(EMU_DIR)/libcudart.so
	$(CC) -shared -Wl,-soname,libcupti.so.13 -Wl,--version-script=tests/emu/cupti/libcupti.map \
		-Wl,--no-undefined $(LDFLAGS) -o $@ $(filter %.o,$^) -L$(EMU_DIR) -lcudart $(LDLIBS_THREAD)
$(EMU_DIR)/libcupti.so: $(EMU_CUPTI)
	ln -sf libcupti.so.13 $@

ALL += $(EMU_CUPTI) $(EMU_DIR)/libcupti.so

# Unit tests of the stand-ins: cmocka binaries linked against the stand-ins, found at run time
# through their rpath ($(BUILD)/tests/unit/../../emu = $(BUILD)/emu).
EMU_TEST_RPATH := -Wl,-rpath,'$$ORIGIN/../../emu'

# $(call emu_unit_test,NAME,LIBS[,DIR]): builds $(BUILD)/tests/unit/NAME from DIR/NAME.c (DIR:
# tests/emu/unit, the emulator's own tests), linked against the stand-ins named in LIBS (cudart
# cuda cupti).
define emu_unit_test
$(BUILD)/tests/unit/$(1): $(call objs,$(or $(3),tests/emu/unit)/$(1).c) $(foreach l,$(2),$(EMU_DIR)/lib$(l).so)
	@mkdir -p $$(@D)
	$$(CC) $$(LDFLAGS) -o $$@ $$(filter %.o,$$^) -L$(EMU_DIR) $(foreach l,$(2),-l$(l)) $$(EMU_TEST_RPATH) $$(LDLIBS_CMOCKA) $$(LDLIBS_THREAD)
UNIT_TESTS += $(BUILD)/tests/unit/$(1)
endef

$(eval $(call emu_unit_test,test_emu_streams,cudart))
$(eval $(call emu_unit_test,test_emu_events,cudart))
$(eval $(call emu_unit_test,test_emu_memory,cudart))
$(eval $(call emu_unit_test,test_emu_memops,cudart cuda))
$(eval $(call emu_unit_test,test_emu_cupti,cudart cuda cupti))
$(eval $(call emu_unit_test,test_emu_symbols,cudart cuda cupti))
$(eval $(call emu_unit_test,test_emu_ptds,cudart cupti))
$(eval $(call emu_unit_test,test_emu_queues,cudart cuda))
$(eval $(call emu_unit_test,test_emu_launch,cudart cuda cupti))
$(eval $(call emu_unit_test,test_emu_capture,cudart))
# Linked with -rdynamic: its own cudaStreamBeginCapture and cuGetProcAddress_v2 stand where an
# LD_PRELOAD interposer's would, exported so that they preempt the libraries' definitions.
$(BUILD)/tests/unit/test_emu_driver_capture: $(call objs,tests/emu/unit/test_emu_driver_capture.c) $(EMU_DIR)/libcudart.so $(EMU_DIR)/libcuda.so
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -rdynamic -o $@ $(filter %.o,$^) -L$(EMU_DIR) -lcudart -lcuda $(EMU_TEST_RPATH) $(LDLIBS_CMOCKA) $(LDLIBS_THREAD)
UNIT_TESTS += $(BUILD)/tests/unit/test_emu_driver_capture

# An LD_PRELOAD interposer shaped like usbyte's, for test_emu_preload.
$(BUILD)/tests/unit/libemu_preload_probe.so: $(call objs,tests/emu/testing/preload_probe.c) tests/emu/testing/preload_probe.map
	@mkdir -p $(@D)
	$(CC) -shared -Wl,--version-script=tests/emu/testing/preload_probe.map $(LDFLAGS) -o $@ $(filter %.o,$^) -ldl
$(eval $(call emu_unit_test,test_emu_preload,cudart))
$(BUILD)/tests/unit/test_emu_preload: $(BUILD)/tests/unit/libemu_preload_probe.so
