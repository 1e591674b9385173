"""Fields: the service, the body and record, options, type conversions, the routes."""
