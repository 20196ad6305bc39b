# The fuzzer of usbyte-sim's inputs (tests/fuzz/fuzz.py): profiles, plans and reports, mutated
# from the profiles of data/profiles and generated ones.
#
#   make fuzz                        FUZZ_SECONDS (180) of cases from seed FUZZ_SEED (1); prints
#                                    a summary line, keeps failing cases in $(BUILD)/fuzz-failures
#   make fuzz FUZZ_SEED=7            other cases; a failure replays with --seed S --case N
#
# make test runs a short pass (tests/fuzz/fuzz_short.sh: a fixed seed, the in-tree profiles).
FUZZ_SECONDS ?= 180
FUZZ_SEED ?= 1
FUZZ_CORPUS := data/profiles

.PHONY: fuzz
fuzz: $(BUILD)/usbyte-sim
	python3 tests/fuzz/fuzz.py --sim $(BUILD)/usbyte-sim --seed $(FUZZ_SEED) --seconds $(FUZZ_SECONDS) \
		$(addprefix --corpus ,$(FUZZ_CORPUS)) --out $(BUILD)/fuzz-failures

INTEGRATION_TESTS += tests/fuzz/fuzz_short.sh
