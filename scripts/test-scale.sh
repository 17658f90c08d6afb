# Sourced by the shell test harnesses: the one size knob of the test suite.
#   TANDEM_TEST_SCALE=small (default: `make test`, edge sizes plus a few random
#                     ones, one seed) | full (`make check`: today's full sizes
#                     and seeds)
# Sets TDM_SCALE to small or full; an unknown value stops the harness (exit 2)
# instead of running some other tier silently. The tiers change sizes and
# seeds, never what is checked. The C harnesses read the same variable in
# tests/prop.c (prop_scale_full), the Python tests in python/tests/conftest.py.
case "${TANDEM_TEST_SCALE:-small}" in
  small|"") TDM_SCALE=small ;;
  full) TDM_SCALE=full ;;
  *) echo "TANDEM_TEST_SCALE=${TANDEM_TEST_SCALE}: expected small or full" >&2; exit 2 ;;
esac
