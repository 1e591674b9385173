"""The field types as pure functions: every type, numbers, dates and times, geometry."""
