# Switchboard gateway image. Build with the commit baked in:
#   docker build --build-arg GIT_SHA=$(git rev-parse --short HEAD) \
#                --build-arg BUILT_AT=$(date -u +%Y-%m-%dT%H:%M:%SZ) -t switchboard .
# Run: docker run -p 8000:8000 -e SWITCHBOARD_ENV=production -e SWITCHBOARD_JWT_SECRET=... \
#        -e SWITCHBOARD_ENCRYPTION_KEYS=... -e SWITCHBOARD_DATABASE_URL=postgresql+asyncpg://... switchboard
# PORT (default 8000) and WORKERS (default 1) choose where and how many processes serve.

# One pinned base for both stages: the virtualenv built in the first runs unchanged in the second.
ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/switchboard
ENV PATH=/opt/switchboard/bin:$PATH
WORKDIR /src

# Dependencies first, from pyproject.toml alone: a change to the source reuses this layer.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
      > requirements.txt \
 && pip install -r requirements.txt

COPY README.md LICENSE ./
COPY src ./src
ARG GIT_SHA=unknown
ARG BUILT_AT=
# /version reports these: "<git sha> <built at>", read by settings at start.
RUN printf '%s %s\n' "${GIT_SHA}" "${BUILT_AT:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}" > src/switchboard/_build_info.txt \
 && pip install --no-deps .


FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/switchboard/bin:$PATH \
    SWITCHBOARD_DATA_DIR=/data \
    PORT=8000 \
    WORKERS=1

RUN groupadd --system --gid 10001 switchboard \
 && useradd --system --uid 10001 --gid switchboard --home-dir /app --shell /usr/sbin/nologin switchboard \
 && mkdir -p /data \
 && chown switchboard:switchboard /data

COPY --from=build /opt/switchboard /opt/switchboard
WORKDIR /app
COPY LICENSE ./
COPY config ./config

USER 10001:10001
VOLUME ["/data"]
EXPOSE 8000

# On the port the server was given, whatever PORT says at run time.
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import os, sys, urllib.request; url = 'http://127.0.0.1:%s/health' % os.environ.get('PORT', '8000'); sys.exit(0 if urllib.request.urlopen(url, timeout=2).status == 200 else 1)"]

CMD ["sh", "-c", "exec switchboard serve --host 0.0.0.0 --port \"${PORT}\" --workers \"${WORKERS}\""]
