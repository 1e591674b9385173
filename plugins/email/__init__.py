"""email: layouts, templates, sending, suppressions and RFC 8058 one-click unsubscribe.

Tables (``tables.py``, migration ``email_0001_tables``): ``svc_email_layouts``,
``svc_email_templates`` (key unique per site), ``svc_email_suppressions`` (lower-cased
addresses), ``svc_email_batches`` (a queued send's rendered message). Routes (site admin unless
noted): ``/email/capabilities``, ``/email/layouts[/{id}]``, ``/email/templates[/{id}]``,
``/email/templates/{key}/preview``, ``/email/templates/preview`` (an unsaved source),
``/email/send``, ``/email/test``,
``/email/suppressions[/{email}]``; public: ``GET, POST /email/unsubscribe`` and
``POST /email/unsubscribe/undo``.

Modules: ``render`` (sandboxed templates through utils' renderer, layouts, nh3, text part),
``addresses`` (one address per value, no line breaks), ``catalog`` (layouts and templates),
``sending`` (send now or queue, suppression filter, List-Unsubscribe), ``tokens`` (the
unsubscribe JWT), ``suppressions``, ``page`` (the HTML pages), ``routes``, ``schemas``.

Hooks: register_settings, register_jobs (``email.deliver``,
``email.batches.prune``), register_rate_limits (``email_unsubscribe``), register_routes, site_deleted, and
accounts' ``compose_account_email`` (``account_emails``: a site template keyed
``account.verification`` etc. replaces the built-in account email).
Audit actions: ``email_suppressed``, ``email_unsuppressed``, ``email_unsubscribed``.
Requires ``utils`` (its ``api.render_template``). Mail leaves through the kernel's mailer.
``api.py``: ``send(kernel, site_id, body)``, the send path for other plugins (a flow's mail).
"""
