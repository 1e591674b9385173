"""Kernel tests use the fixtures of kernel.testing (the svc pytest plugin)."""
