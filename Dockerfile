# svc production image: `docker build -t svc .`, then see compose.yaml and docs/operations.md.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    SVC_DATA_DIR=/data

# Install from a copy of the sources, then drop them: the image runs the installed package.
COPY pyproject.toml README.md /src/
COPY kernel /src/kernel
COPY plugins /src/plugins
COPY extensions_sdk /src/extensions_sdk
# The production extras: PostgreSQL, S3, the MCP endpoint and store sync (pyproject.toml).
RUN pip install '/src[production]' \
    && rm -rf /src \
    && useradd --system --uid 10001 --user-group --home-dir /data --no-create-home svc \
    && mkdir -p /data \
    && chown svc:svc /data

USER svc
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8000

# 200 once the service is ready (utils plugin); urllib raises on 503, so the exit status is non-zero.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('SVC_PORT', '8000') + '/api/v1/utils/health', timeout=4)"]

CMD ["svc", "serve", "--host", "0.0.0.0"]
