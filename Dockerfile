# The app image: web (Daphne), worker, beat and the mock provider all run from it.
FROM python:3.12-slim-bookworm

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    UV_PROJECT_ENVIRONMENT=/opt/venv \
    UV_PYTHON_DOWNLOADS=never \
    PATH=/opt/venv/bin:$PATH

WORKDIR /app
# Agents run only inside bubblewrap (with socat as their one way out); git serves workspaces.
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap socat git \
    && rm -rf /var/lib/apt/lists/*
RUN pip install --no-cache-dir uv==0.13.9

# Dependencies first, so code changes do not reinstall them. No dev group in the image.
COPY pyproject.toml uv.lock ./
RUN uv sync --frozen --no-dev --no-install-project --compile-bytecode

COPY . .
# Daphne serves the collected files (hashed names, gzip copies) through WhiteNoise
# (kandev_web/static_files.py). Settings need service URLs and a key to load; these are for this
# step only (collectstatic connects to neither), so no key is baked into the image.
RUN DATABASE_URL=postgresql://build@127.0.0.1/build REDIS_URL=redis://127.0.0.1:6379/0 \
    KANDEV_SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput

RUN useradd --create-home --uid 1000 kandev
USER kandev
EXPOSE 8000
# The web process of devtools/processes.py (tests/integration/ops/test_compose.py checks it).
CMD ["python", "-m", "daphne", "-b", "0.0.0.0", "-p", "8000", "kandev_web.asgi:application"]
