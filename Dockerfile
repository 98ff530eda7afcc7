# Switchboard gateway image. Build with the commit baked in:
#   docker build --build-arg GIT_SHA=$(git rev-parse --short HEAD) \
#                --build-arg BUILT_AT=$(date -u +%Y-%m-%dT%H:%M:%SZ) -t switchboard .
# Run: docker run -p 8000:8000 -e SWITCHBOARD_ENV=production -e SWITCHBOARD_JWT_SECRET=... \
#        -e SWITCHBOARD_ENCRYPTION_KEYS=... -e SWITCHBOARD_DATABASE_URL=postgresql+asyncpg://... switchboard
FROM python:3.11-slim

ARG GIT_SHA=unknown
ARG BUILT_AT=
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    SWITCHBOARD_DATA_DIR=/data

RUN groupadd --system --gid 10001 switchboard \
 && useradd --system --uid 10001 --gid switchboard --home-dir /app --shell /usr/sbin/nologin switchboard

WORKDIR /app
COPY pyproject.toml README.md ./
COPY src ./src
# /version reports these: "<git sha> <built at>", read by settings at start.
RUN printf '%s %s\n' "${GIT_SHA}" "${BUILT_AT:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}" > src/switchboard/_build_info.txt \
 && pip install . \
 && rm -rf src
COPY config ./config

RUN mkdir -p /data && chown switchboard:switchboard /data
USER switchboard
VOLUME ["/data"]
EXPOSE 8000

HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD python -c "import urllib.request, sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=2).status == 200 else 1)"

CMD ["switchboard", "serve", "--host", "0.0.0.0"]
