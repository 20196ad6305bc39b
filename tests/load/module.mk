# make test-load: the suite under CPU load (tests/load/under_load.sh; ROUNDS, HOGS, SAN).
.PHONY: test-load
test-load:
	@ROUNDS=$(or $(ROUNDS),3) HOGS=$(or $(HOGS),2) tests/load/under_load.sh
