"""Messages between parts and processes: ``bus`` (filters and actions), ``topics`` (live per-site
signals), ``slots`` (connection slots per site across workers)."""
