"""Translation-memory lookup at scale: ``POST /tm/lookup``'s service call against 100,000 entries.

Fills one language pair of a fresh SQLite database with ``--entries`` entries: sentences of 3 to
15 words drawn from a 20,000-word synthetic vocabulary with Zipf frequencies (a few words in
most sentences, most words rare, like real text). Then times ``tm_lookup.best_match`` (the word-index
prefilter, rapidfuzz's ``fuzz.ratio`` over the candidates, one primary-key read of the winner):

- **near** queries: stored sentences with about one character in 15 changed (TM hits);
- **miss** queries: fresh sentences from the same vocabulary (what most lookups of new text are).

Recall: for ``--check`` of the near queries, the best score the index finds is compared with a
full scan (rapidfuzz ``extractOne`` over every entry, the exhaustive answer). Also timed: the
first lookup (building the index) and one lookup after an insert (the in-place refresh). Usage:

    .venv/bin/python bench/tm_bench.py --entries 100000 --queries 500
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import random
import tempfile
import time
from pathlib import Path

from loadclient import quantile, rss_bytes  # a sibling module of bench/
from rapidfuzz import fuzz, process
from sqlalchemy import insert

from kernel.app import create_app, shutdown_kernel, startup_kernel
from kernel.base.settings import Settings
from kernel.db.meta import now_utc
from kernel.db.migrate import migration_paths, upgrade
from plugins.settings.tables import tm_entries
from plugins.settings.tm import tm, tm_lookup
from plugins.settings.tm.tm_index import normalise

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def corpus(rng: random.Random, n: int) -> tuple[list[str], callable]:
    vocab = ["".join(rng.choice(LETTERS) for _ in range(rng.randint(2, 10))) for _ in range(20_000)]
    weights = [1 / (i + 1) for i in range(len(vocab))]

    def sentence() -> str:
        words = rng.choices(vocab, weights, k=rng.randint(3, 15))
        return " ".join(words).capitalize() + "."

    return list(dict.fromkeys(sentence() for _ in range(n + n // 20)))[:n], sentence


def mutate(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(max(1, len(chars) // 15)):
        chars[rng.randrange(len(chars))] = rng.choice(LETTERS)
    return "".join(chars)


def rss_mb() -> float:
    """This process's resident memory (Linux), in MB."""
    return rss_bytes() / 1e6


def pct(samples: list[float], p: float) -> float:
    return quantile(samples, p) * 1000


async def main(n: int, queries: int, check: int, seed: int, gc_off: bool = False) -> None:
    rng = random.Random(seed)
    texts, sentence = corpus(rng, n)
    data = Path(tempfile.mkdtemp())
    settings = Settings.from_env(environ={"SVC_DATA_DIR": str(data), "SVC_ADMIN_PASSWORD": "bench-pass-1",
                                          "SVC_JOBS_INPROCESS": "false"})
    app = create_app(settings)
    kernel = app.kernel
    upgrade(f"sqlite:///{data / 'svc.sqlite3'}", migration_paths(kernel.pm))
    await startup_kernel(kernel)
    now = now_utc()
    rows = [{"id": f"e{i:07d}", "site_id": "default", "source_lang": "en", "target_lang": "de",
             "source_hash": hashlib.sha256(t.encode()).hexdigest(), "source_text": t, "target_text": t.upper(),
             "quality": None, "context": None, "source": "bench", "created_at": now, "updated_at": now}
            for i, t in enumerate(texts)]
    started = time.perf_counter()
    async with kernel.db.begin() as conn:
        for i in range(0, len(rows), 5000):
            await conn.execute(insert(tm_entries), rows[i:i + 5000])
    print(f"entries {len(rows):,} (inserted in {time.perf_counter() - started:.1f} s)")

    gc.collect()
    rss_before = rss_mb()
    started = time.perf_counter()
    await tm_lookup.best_match(kernel, "default", texts[0], "en", "de", 75)
    gc.collect()
    if gc_off:
        gc.disable()
    print(f"first lookup (builds the index): {(time.perf_counter() - started) * 1000:.0f} ms, "
          f"resident memory +{rss_mb() - rss_before:.0f} MB")

    near = [(mutate(rng, t), t) for t in rng.sample(texts, queries)]
    misses = [sentence() for _ in range(queries)]
    results: dict[str, list[float]] = {"near": [], "miss": []}
    cpu: dict[str, list[float]] = {"near": [], "miss": []}
    found: list[tuple[str, float | None]] = []
    for kind, batch in (("near", [q for q, _ in near]), ("miss", misses)):
        for query in batch:
            started, cpu_started = time.perf_counter(), time.process_time()
            match = await tm_lookup.best_match(kernel, "default", query, "en", "de", 75)
            results[kind].append(time.perf_counter() - started)
            cpu[kind].append(time.process_time() - cpu_started)
            if kind == "near":
                found.append((query, match["score"] if match else None))
    for kind, samples in results.items():
        hits = sum(1 for _, s in found if s is not None) if kind == "near" else None
        extra = f", {hits}/{len(samples)} matched" if hits is not None else ""
        print(f"{kind:5} {len(samples)} lookups: p50 {pct(samples, 0.5):6.2f} ms  p99 {pct(samples, 0.99):6.2f} ms  "
              f"max {max(samples) * 1000:6.2f} ms{extra}")
        print(f"{'':5} CPU time: p50 {pct(cpu[kind], 0.5):6.2f} ms  p99 {pct(cpu[kind], 0.99):6.2f} ms")

    normalised = [normalise(t) for t in texts]
    same = 0
    for query, score in found[:check]:
        full = process.extractOne(normalise(query), normalised, scorer=fuzz.ratio, score_cutoff=75, processor=None)
        full_score = None if full is None else round(float(full[1]), 2)
        same += (full_score is None and score is None) or (full_score is not None and score == full_score)
    print(f"recall: the index's best score equals the full scan's in {same}/{min(check, len(found))} near queries")

    async with kernel.unit_of_work("default") as uow:
        await tm.upsert_in(uow, {"source_lang": "en", "target_lang": "de", "source_text": "A brand new sentence here.",
                                 "target_text": "x"})
    started = time.perf_counter()
    match = await tm_lookup.best_match(kernel, "default", "a brand new sentence here", "en", "de", 75)
    print(f"lookup right after an insert (in-place refresh): {(time.perf_counter() - started) * 1000:.2f} ms, "
          f"found: {match is not None}")
    await shutdown_kernel(kernel)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--check", type=int, default=200, help="near queries compared with a full scan")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--gc-off", action="store_true", help="no garbage collection while timing (diagnosis)")
    args = parser.parse_args()
    asyncio.run(main(args.entries, args.queries, args.check, args.seed, args.gc_off))
