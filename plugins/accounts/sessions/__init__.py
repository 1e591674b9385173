"""Sessions: login, refresh, logout, live checks, listing and revoking, switching sites, impersonation,
password change."""
