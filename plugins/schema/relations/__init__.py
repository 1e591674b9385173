"""Relations: the service, the rules that make one valid, the routes."""
