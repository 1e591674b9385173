"""Search latency on 10,000 items (docs/decisions/items-search.md, "Measurements").

Skipped unless ``SVC_SEARCH_BENCH=1``; prints a table. Run it with ``-s``, on SQLite or with
``SVC_TEST_DATABASE_URL`` for PostgreSQL (where a second pass runs after ``ANALYZE``).
"""

from __future__ import annotations

import os
import random
import statistics
import time
from typing import Any

import pytest
from sqlalchemy import text

from kernel.testing import Calls

SYLLABLES = ["phở", "bò", "hà", "nội", "sài", "gòn", "bún", "chả", "cơm", "tấm", "bánh", "mì", "đà", "nẵng", "huế",
             "trà", "sữa", "cà", "phê", "nước", "mắm", "rau", "thịt", "gà", "cá", "tôm", "mực", "ngon", "nhất",
             "đường", "phố", "chợ", "quán", "nhà", "hàng", "lẩu", "xôi", "chè", "ốc", "nem", "gỏi", "cuốn", "canh"]
RUNS = 15

pytestmark = pytest.mark.skipif(not os.environ.get("SVC_SEARCH_BENCH"), reason="set SVC_SEARCH_BENCH=1 to run")


def _vocabulary(rng: random.Random) -> tuple[list[str], list[float]]:
    words = ["".join(rng.choice(SYLLABLES) for _ in range(rng.choice([1, 1, 2]))) + (str(i) if i > 300 else "")
             for i in range(3000)]
    return words, [1 / (i + 1) for i in range(len(words))]  # Zipf-like: a few words are everywhere


async def _time(calls: Calls, q: str, offset: int) -> tuple[int, float]:
    times, total = [], 0
    for _ in range(RUNS):
        start = time.perf_counter()
        answer = await calls.ok("get", "/search", full=True, params={"q": q, "offset": offset})
        times.append((time.perf_counter() - start) * 1000)
        total = answer["meta"]["total"]
    return total, statistics.median(times)


async def test_search_latency_on_10000_items(svc_app: Any, calls: Calls, member):
    rng = random.Random(7)
    words, weights = _vocabulary(rng)
    await calls.collection("articles", {"title": "string", "body": "text", "author": "string"})
    start = time.perf_counter()
    for _ in range(10):
        await calls.create("articles", [{
            "title": " ".join(rng.choices(words, weights, k=rng.randint(3, 8))).capitalize(),
            "body": " ".join(rng.choices(words, weights, k=rng.randint(50, 150))),
            "author": rng.choice(words), "status": rng.choice(["published", "draft"]),
        } for _ in range(1000)])
    print(f"\n{svc_app.kernel.db.dialect}: 10,000 items created in {time.perf_counter() - start:.1f} s")
    reader, _ = await member([{"collection": "articles", "action": "read", "fields": ["title", "status"],
                               "conditions": {"status": {"_eq": "published"}}}])
    queries = [("pho", 0), ("pho bo", 0), ("p", 0), ("ph", 0), (words[2500], 0), ("ha noi ngon", 0),
               ("zzzz", 0), ("pho", 1000)]
    passes = ["", "ANALYZE"] if svc_app.kernel.db.dialect == "postgresql" else [""]
    for statement in passes:
        if statement:
            async with svc_app.kernel.db.begin() as conn:
                await conn.execute(text(statement))
            print("after ANALYZE")
        for who, caller in (("admin", calls), ("member", reader)):
            for q, offset in queries:
                total, median = await _time(caller, q, offset)
                print(f"  {who:6} q={q!r:14} offset={offset:<5} total={total:6}  median {median:6.1f} ms")
