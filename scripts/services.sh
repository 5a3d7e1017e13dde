#!/usr/bin/env bash
# Installs (when missing) and starts the real Redis and MariaDB the integration tests use,
# on loopback, and prepares the test database and user. Idempotent: safe to run again.
# Prints the environment the tests read (MEMBUS_TEST_REDIS_URL, MEMBUS_TEST_MYSQL_DSN).
set -euo pipefail

DB=${MEMBUS_TEST_DB:-membus_test}
DBUSER=${MEMBUS_TEST_DB_USER:-membus}
DBPASS=${MEMBUS_TEST_DB_PASS:-membus}

log() { printf '[services] %s\n' "$*" >&2; }

need_install=()
command -v redis-server >/dev/null 2>&1 || need_install+=(redis-server)
[ -x /usr/sbin/mariadbd ] || need_install+=(mariadb-server)
if [ ${#need_install[@]} -gt 0 ]; then
  log "installing ${need_install[*]} from Debian"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq "${need_install[@]}" >&2
fi

if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  log "starting redis on 127.0.0.1:6379"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >&2
fi

if ! mysqladmin --protocol=socket ping >/dev/null 2>&1; then
  log "starting mariadb"
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql >&2
fi

for i in $(seq 1 60); do
  redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && mysqladmin --protocol=socket ping >/dev/null 2>&1 && break
  sleep 0.5
  [ "$i" = 60 ] && { log "redis or mariadb did not come up in 30 s"; exit 1; }
done

mysql --protocol=socket -uroot <<SQL
CREATE DATABASE IF NOT EXISTS \`${DB}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE USER IF NOT EXISTS '${DBUSER}'@'127.0.0.1' IDENTIFIED BY '${DBPASS}';
CREATE USER IF NOT EXISTS '${DBUSER}'@'localhost' IDENTIFIED BY '${DBPASS}';
GRANT ALL PRIVILEGES ON *.* TO '${DBUSER}'@'127.0.0.1';
GRANT ALL PRIVILEGES ON *.* TO '${DBUSER}'@'localhost';
FLUSH PRIVILEGES;
SQL

echo "export MEMBUS_TEST_REDIS_URL=redis://127.0.0.1:6379/0"
echo "export MEMBUS_TEST_MYSQL_DSN='${DBUSER}:${DBPASS}@tcp(127.0.0.1:3306)/${DB}?parseTime=true&multiStatements=true'"
log "redis and mariadb ready"
