"""Permission rules: a policy's rules, a role's own rules, their checks, and the grants a deleted
collection or field takes along."""
