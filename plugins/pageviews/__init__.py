"""pageviews: a consent-aware pageview beacon and daily stats, without storing an IP.

Tables (``tables.py``, migration ``pageviews_0001_daily``): ``svc_pageview_daily``,
``svc_pageview_visitors`` (the day's salted visitor hashes), ``svc_pageview_salts``.

- ``POST /pageviews/{site_id}/hit`` (public, rate limited per IP under an HMAC of the IP):
  ``{ path, referrer? }`` read as JSON whatever its Content-Type (``navigator.sendBeacon``
  posts text/plain); answers 204. ``DNT: 1``, ``Sec-GPC: 1`` and bots (crawlerdetect, when
  ``botFilter``) are not counted (``beacon.py``).
- ``GET /pageviews/stats?from=&to=&path=`` (bearer): ``{ data: [{ date, views, uniques }] }``.

The site setting ``pageviews`` (declared here, ``config.py``) picks the strategy
(``counters.py``: ``db-rollup``, ``hot-counter``, ``hll``, ``cdc``) and the flush interval;
``service.PageviewCounter`` (``kernel.state["pageviews"]``) counts and answers the stats.

Hooks: register_settings, register_setting_keys (``pageviews``),
register_event_consumers (``pageviews.rollup``), startup (the flusher),
shutdown (flushes what is pending), register_routes. Events: ``pageviews.hit`` (strategy cdc).
"""
