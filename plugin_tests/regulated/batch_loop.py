"""A worker process for the crash test: runs envelope migration or rewrap batches against the
database of ``SVC_DATA_DIR``/``SVC_DATABASE_URL`` (environment), printing one line per committed
batch and pausing between batches, until done. The test SIGKILLs it between two batches."""

from __future__ import annotations

import asyncio
import os
import sys

from kernel.app import create_app, shutdown_kernel, startup_kernel
from kernel.base.settings import Settings
from plugins.regulated import service


async def main(kind: str, site_id: str, limit: int) -> None:
    app = create_app(Settings.from_env(environ=dict(os.environ)))
    kernel = app.kernel
    await startup_kernel(kernel)
    try:
        while True:
            async with kernel.unit_of_work(site_id) as uow:
                if kind == "migrate":
                    done = await service.migrate_batch(kernel, uow.db, limit)
                else:
                    done = await service.rewrap_batch(kernel, uow.db, limit)
            print(f"batch {done}", flush=True)
            if done < limit:
                print("done", flush=True)
                return
            await asyncio.sleep(0.3)  # between batches: where the test kills the process
    finally:
        await shutdown_kernel(kernel)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
