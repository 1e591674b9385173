"""privacy: consent, restriction of processing, data export, retention and erasure (issue 22,
part 1; the regulated plugin does encryption, keys, the field-access log and SAR).

Owns ``svc_privacy_consents``, ``svc_privacy_restrictions``, ``svc_privacy_erasures``
(``tables.py``, migration ``privacy_0001_tables``) and the site settings ``retention`` and
``erasureDualControl``. Routes: ``/me/consents``, ``/me/consents/{kind}``, ``/me/restriction``,
``/me/data-export``, ``/me/automated-decisions``, ``/retention``, ``/retention/run``,
``/admin/erasure`` (+ ``/{id}``, ``/{id}/confirm``, ``/{id}/execute``).

Hooks: register_settings (``SVC_RATE_LIMIT_DATA_EXPORT``),
register_rate_limits (``privacy_export``), register_setting_keys, register_site_caches
(``privacy_subjects``), consent_state, processing_restricted, marketing_excluded (the kernel's
privacy hooks, read through ``kernel.policy.privacy``), register_jobs (``privacy.retention``, daily),
register_routes, site_deleted.
Events: emits the bus filter ``privacy.erase`` ``{ collection, ids }`` inside an erasure's
transaction and the action ``privacy.changed`` ``{ siteId }`` after a consent or restriction
change. Audit: consent_granted, consent_withdrawn, processing_restricted,
processing_unrestricted, data_exported, retention_run, erasure_requested, erasure_confirmed,
data_erased.
"""
