"""One hypothesis profile for every property test: 60 examples per test, no
per-example deadline (CI machines are shared and slow at times), and a
reproduction blob printed with any failure."""

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # the property tests then skip themselves
    pass
else:
    settings.register_profile("tandem", max_examples=60, deadline=None, print_blob=True,
                              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    settings.load_profile("tandem")
