"""redisio."""
