"""The upload guard and every upload surface: the policy, the file catalogue, the content checks, SVG,
staging, import."""
