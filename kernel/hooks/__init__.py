"""Hooks: ``hookspecs`` (the kernel's extension points) and ``plugins`` (the plugin manager)."""
