"""The kernel's own routes, above http and the tables they read: ``sites`` and ``sites_routes``
(``/sites``, the default site), ``jobs`` (the instance admin's ``GET /admin/jobs``)."""
