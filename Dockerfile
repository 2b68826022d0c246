# Two stages: the first builds the wheels (Pokna, and pokna-verify, the core it depends on), the second
# installs them (not editable) with the pinned
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY service ./service
COPY verifier ./verifier
RUN pip wheel --no-deps --wheel-dir /wheels ./verifier .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    POKNA_HOST=0.0.0.0 POKNA_PORT=8000 POKNA_DATA_DIR=/var/lib/pokna
COPY constraints.txt /tmp/constraints.txt
COPY --from=build /wheels /tmp/wheels
RUN pip install -c /tmp/constraints.txt /tmp/wheels/pokna_verify-*.whl /tmp/wheels/pokna-*.whl \
    && rm -rf /tmp/wheels /tmp/constraints.txt
# pokna.db.migrate finds the Alembic scripts beside the package's install root; put them there and prove at
# build time that the installed package sees them (the build fails otherwise).
COPY migrations /tmp/migrations
RUN target="$(python -c 'from pokna.db.migrate import MIGRATIONS_DIR; print(MIGRATIONS_DIR)')" \
    && mv /tmp/migrations "$target" \
    && python -c 'from pokna.db.migrate import head_revision; assert head_revision(), "no migrations"' \
    && pokna --help > /dev/null
# A fixed numeric uid, so an orchestrator can check it is not root (runAsNonRoot) before starting it.
RUN groupadd --system --gid 10001 pokna \
    && useradd --system --uid 10001 --gid pokna --home-dir /var/lib/pokna --create-home pokna
USER 10001:10001
WORKDIR /var/lib/pokna
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=5 \
  CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('POKNA_PORT', '8000'), timeout=2)"
CMD ["pokna", "serve", "--no-migrate"]
