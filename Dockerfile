FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    POKNA_HOST=0.0.0.0 POKNA_PORT=8000 POKNA_DATA_DIR=/var/lib/pokna

WORKDIR /app
COPY pyproject.toml constraints.txt README.md ./
COPY service ./service
COPY migrations ./migrations
RUN pip install -c constraints.txt -e . \
    && useradd --system --home-dir /var/lib/pokna --create-home pokna
USER pokna
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --retries=5 \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2)"
CMD ["pokna", "serve", "--no-migrate"]
