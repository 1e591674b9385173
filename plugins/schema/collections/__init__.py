"""Collections: the service, the body and record, row lookup, the routes."""
