# The hivecat image: the operator (`hivecat run`, as the chart runs it) and the copy Jobs and
# SparkApplications it launches (`hivecat distcp`, /opt/hivecat/spark_copy.py). Python, a Java 17 runtime for
# Spark (the copy engine's spark engine and local Spark sessions), MIT Kerberos' GSS-API library, and hivecat in
# a virtual environment; no compilers or build tools in the final stage. Runs as the numeric user 10001 (the chart's runAsUser).
#
#   docker build -t hivecat:dev .                       (BuildKit; or `podman build`)
#   docker build --secret id=ca-bundle,src=/etc/ssl/certs/ca-certificates.crt -t hivecat:dev .
#
# PYTHON_IMAGE is the base: any Debian bookworm image with Python 3.11 and `python -m venv` (the default, or one
# made with debootstrap, as scripts/build-image.sh does where no registry is reachable). The Python packages are
# exactly requirements.lock's, checked against its hashes (`make lock` writes it from pyproject.toml). Behind a
# TLS-inspecting proxy, pass its CA bundle as the build secret `ca-bundle`: pip trusts it during the build, and
# a secret mount is never part of a layer, so the bundle is not in the image.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY requirements.lock ./
# gssapi (Kerberos) is a source package on Linux: built here against MIT krb5's headers with the lock's Cython;
# pyspark and thrift are source packages too. Python's headers come with python3-dev where the base lacks them.
# The build tools are installed first from the lock, then every package without build isolation, so nothing is
# fetched that the lock does not pin.
# hadolint ignore=DL3008,SC2046
RUN --mount=type=secret,id=ca-bundle,required=false \
    if [ -s /run/secrets/ca-bundle ]; then export PIP_CERT=/run/secrets/ca-bundle; fi \
 && headers="$(python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h" \
 && apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev libkrb5-dev $([ -e "$headers" ] || echo python3-dev) \
 && rm -rf /var/lib/apt/lists/* \
 && python -m venv /opt/hivecat/venv \
 && awk '/^[a-z]/ { keep = $1 ~ /^(setuptools|wheel|cython)==/ } keep' requirements.lock > build-tools.lock \
 && /opt/hivecat/venv/bin/pip install --no-cache-dir --require-hashes --no-deps -r build-tools.lock \
 && /opt/hivecat/venv/bin/pip install --no-cache-dir --require-hashes --no-deps --no-build-isolation \
      -r requirements.lock
COPY pyproject.toml README.md ./
COPY operator ./operator
RUN /opt/hivecat/venv/bin/pip install --no-cache-dir --no-deps --no-build-isolation --no-index . \
 && /opt/hivecat/venv/bin/pip uninstall --yes cython wheel \
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
