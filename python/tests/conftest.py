"""One hypothesis profile for every property test: no per-example deadline
(CI machines are shared and slow at times) and a reproduction blob printed
with any failure. The examples per test follow the suite's one size knob,
TANDEM_TEST_SCALE (scripts/test-scale.sh): 15 at small (make test), 60 at
full (make check). HYPOTHESIS_PROFILE=ci (what the build's tests and
scripts/python-test.sh set) derandomizes it, so a CI run draws the same
examples every time; "tandem" draws fresh ones."""

import os

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # the property tests then skip themselves
    pass
else:
    scale = os.environ.get("TANDEM_TEST_SCALE") or "small"
    if scale not in ("small", "full"):
        raise SystemExit(f"TANDEM_TEST_SCALE={scale}: expected small or full")
    common = dict(max_examples=60 if scale == "full" else 15, deadline=None, print_blob=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    settings.register_profile("tandem", **common)
    settings.register_profile("ci", derandomize=True, database=None, **common)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "tandem"))
