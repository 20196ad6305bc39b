# usbyte-sim: the trace-driven simulator (MODEL.md's command line), and the planner benchmark.
SIM_SRCS := tools/usbyte-sim.c tools/sim_net.c tools/sim_svg.c

$(BUILD)/usbyte-sim: $(call objs,$(SIM_SRCS)) $(PLAN_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(call objs,$(SIM_SRCS)) $(PLAN_LIB) $(LDLIBS_JSON) -lm

ALL += $(BUILD)/usbyte-sim

.PHONY: bench-sim
bench-sim: $(BUILD)/usbyte-sim
	BUILD=$(BUILD) tools/bench-sim.sh docs/bench-sim.md
