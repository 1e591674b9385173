"""HTTP: routing, middleware, media, envelopes, rate limiting."""
