# Tests of the build itself: where headers and libraries are taken from (mk/find-nccl.sh,
# DEPS_PREFIX).
INTEGRATION_TESTS += tests/integration/build_paths.sh
