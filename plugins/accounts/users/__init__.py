"""The members of a site: user administration, membership writes, the audit trail's actors."""
