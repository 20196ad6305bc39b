# The layer check (docs/design.md, "Layers") on the objects `make all` built, its own test, and the
# way of the runtime's calls measured in a run (way.sh).
INTEGRATION_TESTS += tests/layers/layers.py tests/layers/layers_test.sh tests/layers/way.sh

# TRACE_CALLS=1 (with a BUILD of its own): interpose/'s and profiler/'s functions report their
# entries and exits to tests/layers/call_tracer.c, linked into that libusbyte.so;
# tests/layers/way.sh builds it so and reads the way of the runtime's calls from a run.
ifneq ($(TRACE_CALLS),)
TRACED_SRCS := $(INTERPOSE_SRCS) $(RUNTIME_PROFILER_SRCS)
$(call objs,$(TRACED_SRCS)): CFLAGS += -finstrument-functions
FLAGS_STAMP_EXTRA += -finstrument-functions on $(TRACED_SRCS)
$(USBYTE_SO): $(BUILD)/obj/tests/layers/call_tracer.o
$(USBYTE_SO): LDFLAGS += -Wl,-Map=$(BUILD)/libusbyte.link-map
endif
