"""The repository's own test policy (the fixtures come from svc's pytest plugin, kernel.testing)."""

pytest_plugins = ["pytester", "tests.skip_policy", "tests.cost_report"]
