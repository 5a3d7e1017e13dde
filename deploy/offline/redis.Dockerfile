# Redis from Debian bookworm's redis-server package (7.0), run like the upstream image.
FROM membus/debian:bookworm
RUN apt-get update && apt-get install -y --no-install-recommends redis-server \
    && rm -rf /var/lib/apt/lists/* && mkdir -p /data && chown redis:redis /data
WORKDIR /data
USER redis
EXPOSE 6379
CMD ["redis-server", "--dir", "/data"]
