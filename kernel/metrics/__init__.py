"""``/metrics``: ``requests`` (by route), ``node`` (every worker of a node), ``site_counts`` (the busiest
sites), ``live`` (live channels), ``stored`` (job queues and consumer lag, read from the jobs and
events tables) and ``worker`` (``svc worker``'s own endpoint). Above db, events and jobs; below http."""
