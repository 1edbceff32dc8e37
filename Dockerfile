# auditor in a container: each start is one run of the daily report (`auditor report daily`),
# then the container exits with its code (0, 1 findings at --fail-on, 3 incomplete). Schedule
# it from the host's cron or a systemd timer, or as a Kubernetes CronJob:
#
#   docker build -t auditor .
#   15 6 * * *  docker run --rm -v /etc/auditor:/etc/auditor:ro -v /var/lib/auditor:/var/lib/auditor \
#       -v /srv/auditor/reports:/srv/auditor/reports -v /var/lib/node_exporter/textfile:/textfile \
#       -v /var/log/gateway:/var/log/gateway:ro auditor
#
# The mounted directories must be writable by uid 10001 (the image's `auditor` user), except
# the read-only config and logs. Any other command: docker run --rm auditor epoch 433 --node URL
# (untested here: this Dockerfile was written without access to a container registry).

FROM python:3.12-slim AS build
# a C compiler for the optional log-line tokenizer (auditor/_logscan.c)
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md ./
COPY auditor ./auditor
COPY queries ./queries
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.12-slim
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels \
    && useradd --system --uid 10001 --home-dir /var/lib/auditor --create-home auditor
USER auditor
ENV AUDITOR_DB=/var/lib/auditor/auditor.duckdb
ENTRYPOINT ["auditor"]
CMD ["--quiet", "--config", "/etc/auditor/auditor.toml", "report", "daily", "--out", "/srv/auditor/reports", \
     "--fail-on", "error", "--prom-textfile", "/textfile/auditor.prom"]
