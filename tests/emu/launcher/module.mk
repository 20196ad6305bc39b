# emu-run, the multi-rank launcher of the CPU emulator (see docs/emulator-nccl.md).
$(BUILD)/emu/emu-run: $(call objs,tests/emu/launcher/emu-run.c)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^

ALL += $(BUILD)/emu/emu-run
