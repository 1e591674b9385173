"""A person's own account: sign up, verify, reset, invitations, the account emails and their queue,
``/auth/me``."""
