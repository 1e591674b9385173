"""Redis plumbing shared by the cache, the bus and the topics: ``redis_fallback`` (riding out an
outage), ``redis_writes`` (writes sent together), ``pubsub_listener`` (a listener's lifecycle)."""
