# The layer check (docs/design.md, "Layers") on the objects `make all` built, and its own test.
INTEGRATION_TESTS += tests/layers/layers.py tests/layers/layers_test.sh
