"""Policy: ``access`` (policy evaluation), ``filtergrammar`` (the filter-tree grammar), ``audit`` (the
audit trail) and ``privacy`` (consent, restriction and retention as every plugin reads them)."""
