#!/bin/sh
# First start: create the system tables, the root password, the database and its user from
# the upstream image's variables; then run mariadbd in the foreground on every interface.
set -eu
datadir=/var/lib/mysql
chown -R mysql:mysql "$datadir" /run/mysqld
# .membus-initialized is written last: an interrupted first start is redone from scratch.
if [ ! -f "$datadir/.membus-initialized" ]; then
  find "$datadir" -mindepth 1 -delete
  : "${MARIADB_ROOT_PASSWORD:?MARIADB_ROOT_PASSWORD is required}"
  mariadb-install-db --user=mysql --datadir="$datadir" --auth-root-authentication-method=normal >/dev/null
  mariadbd --user=mysql --datadir="$datadir" --skip-networking --socket=/run/mysqld/init.sock &
  pid=$!
  i=0
  until mariadb-admin --socket=/run/mysqld/init.sock ping --silent 2>/dev/null; do
    i=$((i + 1)); [ "$i" -lt 60 ] || { echo "mariadb did not start" >&2; exit 1; }; sleep 1
  done
  esc() { printf '%s' "$1" | sed "s/\\\\/\\\\\\\\/g; s/'/\\\\'/g"; }
  {
    echo "ALTER USER 'root'@'localhost' IDENTIFIED BY '$(esc "$MARIADB_ROOT_PASSWORD")';"
    echo "DELETE FROM mysql.global_priv WHERE User='';"
    if [ -n "${MARIADB_DATABASE:-}" ]; then
      echo "CREATE DATABASE IF NOT EXISTS \`$MARIADB_DATABASE\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;"
    fi
    if [ -n "${MARIADB_USER:-}" ]; then
      echo "CREATE USER '$MARIADB_USER'@'%' IDENTIFIED BY '$(esc "${MARIADB_PASSWORD:-}")';"
      [ -z "${MARIADB_DATABASE:-}" ] || echo "GRANT ALL ON \`$MARIADB_DATABASE\`.* TO '$MARIADB_USER'@'%';"
    fi
    echo "FLUSH PRIVILEGES;"
  } | mariadb --socket=/run/mysqld/init.sock -uroot
  mariadb-admin --socket=/run/mysqld/init.sock -uroot -p"$MARIADB_ROOT_PASSWORD" shutdown
  wait "$pid" || true
  touch "$datadir/.membus-initialized"
fi
exec mariadbd --user=mysql --datadir="$datadir" --bind-address=0.0.0.0 --port=3306 "$@"
