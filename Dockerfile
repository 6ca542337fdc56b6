# The hivecat image: the operator (`hivecat run`, as the chart runs it) and the copy Jobs and
# SparkApplications it launches (`hivecat distcp`, /opt/hivecat/spark_copy.py). Python, a Java 17 runtime for
# Spark (the copy engine's spark engine and local Spark sessions), MIT Kerberos' GSS-API library, and hivecat in
# a virtual environment; no compilers or build tools in the final stage. Runs as the numeric user 10001 (the chart's runAsUser).
#
#   docker build -t hivecat:dev .

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY operator ./operator
# Wheels and pure-Python source packages (pyspark), except gssapi (Kerberos), which PyPI has as source only for
# Linux: built here against MIT krb5's headers; the final stage has only the runtime library.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev libkrb5-dev \
 && rm -rf /var/lib/apt/lists/* \
 && python -m venv /opt/hivecat/venv \
 && /opt/hivecat/venv/bin/pip install --no-cache-dir . \
 && /opt/hivecat/venv/bin/python -m compileall -q /opt/hivecat/venv/lib

FROM ${PYTHON_IMAGE}
# Debian's current Java 17 runtime and MIT Kerberos' GSS-API library (security updates come with the base
# image's rebuilds, so no pin).
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless libgssapi-krb5-2 \
 && rm -rf /var/lib/apt/lists/* \
 && ln -s "$(dirname "$(dirname "$(readlink -f /usr/bin/java)")")" /opt/java \
 && groupadd --gid 10001 hivecat \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin hivecat
COPY --from=build /opt/hivecat/venv /opt/hivecat/venv
ENV PATH=/opt/hivecat/venv/bin:$PATH \
    JAVA_HOME=/opt/java \
    HOME=/tmp \
    PYTHONUNBUFFERED=1
# The SparkApplication copies' main application file (workloads/spark_application.py ENTRY_FILE).
RUN ln -s "$(python -c 'import hivecat.commands.spark_copy as m; print(m.__file__)')" /opt/hivecat/spark_copy.py \
 && hivecat --help >/dev/null && hivecat distcp --help >/dev/null
USER 10001:10001
WORKDIR /tmp
ENTRYPOINT ["hivecat"]
CMD ["--help"]
