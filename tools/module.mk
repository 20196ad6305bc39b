# usbyte-sim: the trace-driven simulator (docs/model.md's command line), and the planner benchmark.
SIM_SRCS := tools/usbyte-sim.c tools/sim_net.c tools/sim_curve.c tools/sim_svg.c profiler/fit.c profiler/fit_model.c

$(BUILD)/usbyte-sim: $(call objs,$(SIM_SRCS)) $(PLAN_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(call objs,$(SIM_SRCS)) $(PLAN_LIB) $(LDLIBS_JSON) -lm

ALL += $(BUILD)/usbyte-sim
# Its command line (sim_cli.sh); ddp-tuned against ddp and best on the benchmark profiles (sim_ddp_tuned.sh).
INTEGRATION_TESTS += tests/integration/sim_cli.sh tests/integration/sim_ddp_tuned.sh

.PHONY: bench-sim bench-model
bench-sim: $(BUILD)/usbyte-sim
	BUILD=$(BUILD) tools/bench-sim.sh docs/bench-sim.md

# The cost model's error on the measured curves of data/net, old lines against the model.
bench-model: $(BUILD)/usbyte-sim
	BUILD=$(BUILD) tools/bench-model.sh docs/bench-model.md

# usbyte-report: the reports of a job as one HTML page and a Chrome trace; it draws its timelines
# with the simulator's SVG writer.
REPORT_LIB_SRCS := tools/report_load.c tools/report_job.c tools/report_page.c tools/report_html.c tools/report_html_comm.c \
	tools/report_html_ddp.c tools/report_compare.c tools/report_trace.c tools/sim_svg.c
REPORT_LIB_OBJS := $(call objs,$(REPORT_LIB_SRCS))

$(BUILD)/usbyte-report: $(call objs,tools/usbyte-report.c) $(REPORT_LIB_OBJS) $(PLAN_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(PLAN_LIB) $(LDLIBS_JSON) -lm

ALL += $(BUILD)/usbyte-report

# usbyte-run: a script, copied next to libusbyte.so and usbyte-report, which it finds beside itself.
$(BUILD)/usbyte-run: tools/usbyte-run
	@mkdir -p $(@D)
	cp $< $@ && chmod +x $@

ALL += $(BUILD)/usbyte-run

# Their tests: the report reader's unit tests, the report, doctor, run and install scripts.
REPORT_TEST_BINS := $(patsubst %,$(BUILD)/tests/unit/test_report_%,load html job)
$(REPORT_TEST_BINS): $(BUILD)/tests/unit/%: $(BUILD)/obj/tests/unit/tools/%.o $(REPORT_LIB_OBJS) $(PLAN_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(REPORT_LIB_OBJS) $(PLAN_LIB) $(LDLIBS_JSON) $(LDLIBS_CMOCKA) -lm

UNIT_TESTS += $(REPORT_TEST_BINS)

ifneq ($(wildcard interpose/module.mk),)
INTEGRATION_TESTS += tests/integration/tools_report.sh tests/integration/tools_report_modes.sh \
	tests/integration/tools_report_jobs.sh tests/integration/tools_report_fuzz.sh tests/integration/tools_doctor.sh \
	tests/integration/tools_run.sh
# The cost curve in the runtime on an emulated measured network (model_curve.sh).
INTEGRATION_TESTS += tests/integration/model_curve.sh
endif

# usbyte-doctor: can usbyte reach a framework's NCCL and CUDA calls?  (libelf, the design's
# dependency for reading ELF files.)
$(BUILD)/usbyte-doctor: $(call objs,tools/usbyte-doctor.c)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lelf

ALL += $(BUILD)/usbyte-doctor
