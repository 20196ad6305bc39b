# make demo: the main job on the CPU emulator (examples/demo.sh).  `deps` first, then the build
# (a sub-make, so that nothing is compiled before the dependencies are checked; silent: its
# commands go to $(BUILD)/demo-build.log, shown only when it fails), then the runs.
.PHONY: demo
demo: deps
	@mkdir -p $(BUILD)
	@echo "== building (make all; the commands go to $(BUILD)/demo-build.log)"
	@$(MAKE) --no-print-directory all $(DEMO_DEPS) > $(BUILD)/demo-build.log 2>&1 || \
		{ tail -40 $(BUILD)/demo-build.log; echo "demo: the build failed ($(BUILD)/demo-build.log)"; exit 1; }
	@BUILD=$(BUILD) SAN=$(SAN) examples/demo.sh
