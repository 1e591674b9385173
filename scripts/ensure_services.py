"""Exit 0 when PostgreSQL and Redis answer (creating the test database if needed), else 1."""

from __future__ import annotations

import sys

import psycopg
import redis
from sqlalchemy.engine import make_url


def main(pg_url: str, redis_url: str) -> int:
    url = make_url(pg_url)
    try:
        admin = psycopg.connect(host=url.host, port=url.port or 5432, user=url.username or "postgres",
                                password=url.password, dbname="postgres", connect_timeout=3, autocommit=True)
    except psycopg.Error as exc:
        print(f"PostgreSQL: {exc}", file=sys.stderr)
        return 1
    with admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (url.database,)).fetchone()
        if exists:
            # A fresh database per run: the suite migrates it from nothing.
            admin.execute(f'DROP DATABASE "{url.database}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{url.database}"')
    try:
        redis.Redis.from_url(redis_url, socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        print(f"Redis: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
