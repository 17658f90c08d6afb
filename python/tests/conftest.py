"""One hypothesis profile for every property test: 60 examples per test, no
per-example deadline (CI machines are shared and slow at times), and a
reproduction blob printed with any failure. HYPOTHESIS_PROFILE=ci (what
scripts/python-test.sh sets unless told otherwise) derandomizes it, so a CI
run draws the same examples every time; "tandem" draws fresh ones."""

import os

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # the property tests then skip themselves
    pass
else:
    common = dict(max_examples=60, deadline=None, print_blob=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    settings.register_profile("tandem", **common)
    settings.register_profile("ci", derandomize=True, database=None, **common)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "tandem"))
