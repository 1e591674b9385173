"""``svc serve --workers N``: ``serve`` (one server a process), ``broker`` (the node's broker without
Redis) and ``fanout_gate`` (a worker holds a request until the bus has caught up)."""
