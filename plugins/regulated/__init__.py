"""regulated: envelope encryption of sensitive fields, keys, the field-access log, subject access.

Owns ``svc_regulated_state``, ``svc_regulated_keys``, ``svc_regulated_data_keys`` and
``svc_regulated_field_access`` (``tables.py``). A field with the option ``sensitive: true``
(text fields; ``plugins/schema/fields/options.py``) is never named in a query (items' resolver: 400),
never searched; with envelope mode on its values are stored encrypted under a per-item data key
wrapped by the site's key-encryption key (``crypto.py``, ``kernel.secrets``).

Routes (site admin): ``GET /admin/encryption/keys``, ``POST /admin/encryption/keys/rotate``
``{ keyId }``, ``POST /admin/encryption/keys/rewrap`` ``{ limit? }``, ``GET, POST
/admin/encryption/envelope`` ``{ enabled, password }`` (auth rate bucket),
``POST /admin/encryption/envelope/migrate`` ``{ limit? }``, ``GET /admin/field-access-log``,
``POST /admin/sar/export`` ``{ collection, filter }``.

Hooks: register_settings (``SVC_REGULATED_BATCH``), register_routes,
register_error_codes (KEY_NOT_PROVISIONED, DECRYPTION_FAILED; the kernel's INVALID_CREDENTIALS),
register_event_handlers: filters ``*.items.create|update`` (encrypt, ``envelope.py``),
``items.read`` (decrypt or mask, ``plugins/items/core/reveal.py``), ``fields.create|update``
(migration and unmarking), ``privacy.erase`` (crypto-shred, ``shred.py``).
Audit: ``encryption_key_rotated``, ``envelope_mode_changed``, ``decryption_failed``,
``subject_access_exported``. docs/regulated-content.md.
"""
