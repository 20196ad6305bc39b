# Tests of the build itself: where nccl.h is taken from (mk/find-nccl.sh).
INTEGRATION_TESTS += tests/integration/build_nccl.sh
