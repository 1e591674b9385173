"""Authentication primitives: principals, internal tokens, password hashing.

The ``authenticate`` hook chain (API keys, external JWT, internal JWT) lives in plugins; this
package gives them the shared types and the cryptography.
"""

from kernel.auth.principal import Principal

__all__ = ["Principal"]
