# MariaDB from Debian bookworm's mariadb-server package (10.11), with an entrypoint that
# honours the upstream image's MARIADB_ROOT_PASSWORD, MARIADB_DATABASE, MARIADB_USER and
# MARIADB_PASSWORD on first start.
FROM membus/debian:bookworm
RUN apt-get update && apt-get install -y --no-install-recommends mariadb-server \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
COPY mariadb-entrypoint.sh /usr/local/bin/mariadb-entrypoint.sh
VOLUME /var/lib/mysql
EXPOSE 3306
ENTRYPOINT ["/usr/local/bin/mariadb-entrypoint.sh"]
