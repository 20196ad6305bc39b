# The emulator as a CUDA 12 installation, in $(BUILD)/emu12: the same runtime stand-in under the
# soname and version node libcudart.so.12 (what PyTorch's cu12 wheels load), with the driver,
# CUPTI and NCCL stand-ins relinked against it, the launcher (which puts its own directory first in
# LD_LIBRARY_PATH), and the trainers linked against it, so that their references are
# cudaEventRecord@libcudart.so.12 as a CUDA 12 program's are.  Objects are the CUDA 13 ones.
EMU12_DIR := $(BUILD)/emu12

# cudaMemcpyBatchAsync (and _ptsz) has CUDA 13's signature here; a CUDA 12 runtime has none (before 12.8) or
# another one, so this one hides it, and usbyte's per-copy staging runs under it.
$(EMU12_DIR)/libcudart.map: tests/emu/cudart/libcudart.map tests/emu/v12/module.mk
	@mkdir -p $(@D)
	sed -e 's/libcudart\.so\.13/libcudart.so.12/g' \
	    -e 's/^\( *\)cuda\*;$$/\1cuda*;\n    local:\n\1cudaMemcpyBatchAsync;\n\1cudaMemcpyBatchAsync_ptsz;/' $< > $@

$(EMU12_DIR)/libcudart.so.12: $(call objs,$(EMU_CUDART_SRCS)) $(EMU12_DIR)/libcudart.map
	$(CC) -shared -Wl,-soname,libcudart.so.12 -Wl,--version-script=$(EMU12_DIR)/libcudart.map \
		-Wl,--no-undefined $(LDFLAGS) -o $@ $(filter %.o,$^) $(LDLIBS_THREAD)
$(EMU12_DIR)/libcudart.so: $(EMU12_DIR)/libcudart.so.12
	ln -sf libcudart.so.12 $@

$(EMU12_DIR)/libcuda.so.1: $(call objs,$(EMU_CUDA_SRCS)) $(EMU_CUDA_MAP) $(EMU12_DIR)/libcudart.so
	$(CC) -shared $(EMU_CUDA_LDFLAGS) \
		-Wl,--no-undefined $(LDFLAGS) -o $@ $(filter %.o,$^) -L$(EMU12_DIR) -lcudart $(LDLIBS_THREAD)

$(EMU12_DIR)/libcupti.so.13: $(call objs,$(EMU_CUPTI_SRCS)) tests/emu/cupti/libcupti.map $(EMU12_DIR)/libcudart.so
	$(CC) -shared -Wl,-soname,libcupti.so.13 -Wl,--version-script=tests/emu/cupti/libcupti.map \
		-Wl,--no-undefined $(LDFLAGS) -o $@ $(filter %.o,$^) -L$(EMU12_DIR) -lcudart $(LDLIBS_THREAD)

$(EMU12_DIR)/libnccl.so.2: $(call objs,$(EMU_NCCL_SRCS)) $(EMU12_DIR)/libcudart.so.12
	$(CC) -shared -Wl,-soname,libnccl.so.2 $(LDFLAGS) -o $@ $(call objs,$(EMU_NCCL_SRCS)) \
		-L$(EMU12_DIR) -l:libcudart.so.12 -Wl,--no-undefined -lpthread -lrt -lm
$(EMU12_DIR)/libnccl.so: $(EMU12_DIR)/libnccl.so.2
	ln -sf libnccl.so.2 $@

$(EMU12_DIR)/emu-run: $(BUILD)/emu/emu-run
	cp $< $@

EMU12_LIBS := $(addprefix $(EMU12_DIR)/,libcudart.so libcuda.so.1 libcupti.so.13 libnccl.so emu-run)
$(EMU12_DIR)/trainers/%: $(call objs,tests/integration/trainers/%.c tests/integration/trainers/trainer_common.c) $(PLAN_LIB) | $(EMU12_LIBS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) -L$(EMU12_DIR) -Wl,-rpath-link,$(EMU12_DIR) \
		-lcudart -lnccl $(LDLIBS_JSON) $(LDLIBS_THREAD)

ALL += $(EMU12_LIBS) $(EMU12_DIR)/trainers/ddp_like
INTEGRATION_TESTS += tests/integration/runtime_cuda12.sh
