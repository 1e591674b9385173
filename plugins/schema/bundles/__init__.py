"""Schema bundles: the desired schema, the planner (diffing), the runner (applying) and their routes."""
