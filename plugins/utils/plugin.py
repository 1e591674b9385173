"""Hook implementations of the utils plugin."""
