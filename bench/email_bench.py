"""Email: what a send costs before and at the SMTP server (issue 21).

- **render**: ``render.render_message`` of a realistic template (a 3 KB html body with 12
  placeholders inside a 1 KB layout; nh3 sanitising and the derived text part included): the
  work done once per send.
- **personalise**: per marketing recipient, the unsubscribe token (HS256 JWT), the link put
  into the rendered html and text, and the MIME message built (``build_message``): the work
  done once per recipient.
- **smtp**: ``--messages`` messages through ``SmtpMailer`` to a local aiosmtpd server (one
  connection per message, as the mailer does), one after another.

    .venv/bin/python bench/email_bench.py --renders 500 --recipients 2000 --messages 200
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from aiosmtpd.controller import Controller
from loadclient import free_port, quantile  # a sibling module of bench/

from kernel.mailer import SmtpMailer, build_message
from plugins.email import render, sending, tokens

LAYOUT = ('<div style="font-family: Arial, sans-serif; max-width: 600px; margin: 0 auto; color: #222">'
          '<table role="presentation" width="100%" cellpadding="0" cellspacing="0"><tr><td style="padding: 24px">'
          '<h1 style="font-size: 20px">{{ brand }}</h1>{{content}}</td></tr><tr><td style="padding: 12px; '
          'color: #888; font-size: 12px">{{ brand }}, {{ address }} &middot; <a href="{{ unsubscribeUrl }}">'
          'Unsubscribe</a></td></tr></table></div>') + "<!-- padding -->" * 20
BODY = ("<p>Hello {{ user.firstName }} {{ user.lastName }},</p>"
        "<p>Your order <b>{{ order.id }}</b> of {{ order.date }} ships today.</p>"
        "<ul>{{ order.items|join(', ') }}</ul>"
        '<p><a href="https://shop.example.com/orders/{{ order.id }}">Track it</a></p>'
        "<p>Total: {{ order.total }} {{ order.currency }}</p>"
        + "<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.</p>" * 30)
VARIABLES = {"brand": "Acme", "address": "1 Main St", "user": {"firstName": "Ann", "lastName": "<Lee>"},
             "order": {"id": 4711, "date": "2026-11-26", "items": ["Mug", "Tea", "Spoon"], "total": "23.50",
                       "currency": "EUR"}, "unsubscribeUrl": sending.SENTINEL}


class Sink:
    def __init__(self) -> None:
        self.count = 0

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's name
        self.count += 1
        return "250 OK"


class _Kernel:
    class settings:  # noqa: N801 - the attribute shape sending.personal reads
        @staticmethod
        def get(name: str) -> str:
            return "https://api.example.com"

        @staticmethod
        def resolved_jwt_secret() -> str:
            return "b" * 64


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--renders", type=int, default=500)
    parser.add_argument("--recipients", type=int, default=2000)
    parser.add_argument("--messages", type=int, default=200)
    args = parser.parse_args()

    times = []
    for _ in range(args.renders):
        start = time.perf_counter()
        rendered = render.render_message("Order {{ order.id }} ships", BODY, None, LAYOUT, VARIABLES)
        times.append((time.perf_counter() - start) * 1000)
    print(f"render: p50 {statistics.median(times):.2f} ms, p99 {quantile(times, 0.99):.2f} ms "
          f"({len(rendered.html)} chars html, {len(rendered.text)} chars text)")

    message = {"category": "marketing", "cc": [], "replyTo": None, **rendered.as_dict()}
    start = time.perf_counter()
    for i in range(args.recipients):
        email = sending.personal(message, _Kernel, "shop", [f"user{i}@example.com"])
        build_message(email, "news@example.com")
    per = (time.perf_counter() - start) * 1000 / args.recipients
    token_start = time.perf_counter()
    for i in range(args.recipients):
        tokens.issue("b" * 64, "shop", f"user{i}@example.com")
    token_ms = (time.perf_counter() - token_start) * 1000 / args.recipients
    print(f"personalise: {per:.3f} ms per recipient (of which the token {token_ms:.3f} ms)")

    sink, port = Sink(), free_port()
    controller = Controller(sink, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        mailer = SmtpMailer(host="127.0.0.1", port=port, sender="news@example.com")
        start = time.perf_counter()
        for i in range(args.messages):
            await mailer.send(sending.personal(message, _Kernel, "shop", [f"user{i}@example.com"]))
        elapsed = time.perf_counter() - start
    finally:
        controller.stop()
    assert sink.count == args.messages
    print(f"smtp: {args.messages} messages in {elapsed:.2f} s, {args.messages / elapsed:.0f} messages/s "
          f"({elapsed * 1000 / args.messages:.1f} ms each)")


if __name__ == "__main__":
    asyncio.run(main())
