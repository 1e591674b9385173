"""svc's built-in plugins; each loads through the ``svc.plugins`` entry points like any extension."""
