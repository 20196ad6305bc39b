# make gpu-kit: $(BUILD)/gpu-kit/, everything a GPU machine needs to prove or refute usbyte with
# one command (bash build/gpu-kit/check.sh --out DIR; gpu/README.md):
#   bin/ lib/ share/   the installed tree (make install), jansson and libelf carried in lib/usbyte/
#   libexec/           the trainers, the self-checking schedule-mode program and the kit's probes,
#                      linked by soname: on the GPU machine they load its own libcudart.so.13 and
#                      libnccl.so.2 (check.sh finds them), in a rehearsal the emulator's
#   emu/               the emulator's stand-ins: the rehearsal's GPU, and step 2's model
#   py/ examples/      the driver (check.py), the launcher, the PyTorch scripts
#   profiles/          the profiles the trainers replay
#   net/               the measured allreduce curves of data/net (the rehearsal's emulated network)
#   check.sh README.md MANIFEST.json (what it was built from, the C library it needs, its size)
KIT_DIR := $(BUILD)/gpu-kit
KIT_MAX_BYTES := 41943040
KIT_PROGS := $(TRAINER_BINS) $(BUILD)/tests/integration/runtime_sched $(GPU_PROGS)
KIT_EMU := $(addprefix $(BUILD)/emu/,libcudart.so.13 libcuda.so.1 libnccl.so.2 libcupti.so.13)
KIT_PY := gpu/check.py gpu/kit_run.py gpu/torch_facts.py gpu/torch_faults.py
KIT_EXAMPLES := $(wildcard examples/*.py)
KIT_PROFILE_DIR := data/profiles
KIT_PROFILES := $(addprefix $(KIT_PROFILE_DIR)/,resnet50-v100-b64-barrier.json vgg16-v100-b64-barrier.json vgg16-v100-b64.json)
KIT_NET := $(wildcard data/net/*.tsv) data/net/README.md

.PHONY: gpu-kit
gpu-kit: $(BUILD)/libusbyte.so $(addprefix $(BUILD)/,$(INSTALL_TOOLS)) $(KIT_PROGS) $(KIT_EMU) $(KIT_PY) \
		$(KIT_EXAMPLES) $(KIT_PROFILES) $(KIT_NET) gpu/check.sh gpu/README.md gpu/manifest.sh
	rm -rf $(KIT_DIR).new $(KIT_DIR)
	$(MAKE) --no-print-directory -s install DESTDIR= PREFIX=$(abspath $(KIT_DIR).new) > /dev/null
	install -d $(addprefix $(KIT_DIR).new/,libexec emu py examples profiles net)
	install -m 0755 $(KIT_PROGS) $(KIT_DIR).new/libexec/
	install -m 0755 $(KIT_EMU) $(KIT_DIR).new/emu/
	install -m 0755 $(KIT_PY) $(KIT_DIR).new/py/
	install -m 0644 $(KIT_EXAMPLES) $(KIT_DIR).new/examples/
	install -m 0644 $(KIT_PROFILES) $(KIT_DIR).new/profiles/
	install -m 0644 $(KIT_NET) $(KIT_DIR).new/net/
	install -m 0755 gpu/check.sh $(KIT_DIR).new/check.sh
	install -m 0644 gpu/README.md $(KIT_DIR).new/README.md
	gpu/manifest.sh $(KIT_DIR).new $(KIT_MAX_BYTES)
	mv $(KIT_DIR).new $(KIT_DIR) && echo "gpu-kit: $(KIT_DIR)/check.sh --out DIR"
