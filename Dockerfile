# syntax=docker/dockerfile:1
# One image for every process of Agent Kourier; the command picks which (deploy/kubernetes/ runs
# web, worker, beat, Socket Mode and the migrations from it). Build from the repository's root:
#   docker build -t kourier .
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# The runtime dependencies, exactly as locked: requirements.lock is what `make serve` installs too,
# and every file is checked against its hash. Nothing of the dev extras comes in.
FROM ${PYTHON_IMAGE} AS dependencies
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN python -m venv /opt/kourier
COPY requirements.lock /tmp/requirements.lock
RUN /opt/kourier/bin/pip install --require-hashes -r /tmp/requirements.lock

FROM ${PYTHON_IMAGE}
# Bytecode is compiled here at build, so that the processes need no writable source tree.
ENV PATH=/opt/kourier/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DJANGO_SETTINGS_MODULE=kourier.settings \
    STATIC_ROOT=/app/static \
    KOURIER_VAR_DIR=/tmp/kourier
RUN groupadd --system --gid 10001 kourier \
    && useradd --system --uid 10001 --gid kourier --no-create-home --home-dir /nonexistent kourier
COPY --from=dependencies /opt/kourier /opt/kourier
WORKDIR /app
# The source is run in place, not installed (.dockerignore leaves out tests, docs and tooling); it and
# the collected static files stay owned by root, read-only to the service.
COPY . .
RUN python manage.py collectstatic --noinput --verbosity 0 \
    && python -m compileall -q /app
USER 10001:10001
EXPOSE 8000
# The web process: one Daphne, which uses one core at most; run more of them to scale.
# The others: celery -A kourier worker | celery -A kourier beat | python manage.py socket | python manage.py migrate
CMD ["python", "-m", "daphne", "--bind", "0.0.0.0", "--port", "8000", "kourier.asgi:application"]
