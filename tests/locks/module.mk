# The lock contract (interpose/lock_contract.h): clang's thread-safety analysis over every
# interpose/*.c, the declared releases of the global lock, and both tried on planted faults.
INTEGRATION_TESTS += tests/locks/thread_safety.sh tests/locks/releasing.py tests/locks/locks_test.sh
