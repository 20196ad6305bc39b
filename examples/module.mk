# make demo: the main job on the CPU emulator (examples/demo.sh).  `deps` first, then the build
# (a sub-make, so that nothing is compiled before the dependencies are checked), then the runs.
.PHONY: demo
demo: deps
	@$(MAKE) --no-print-directory all $(DEMO_DEPS)
	@BUILD=$(BUILD) SAN=$(SAN) examples/demo.sh
