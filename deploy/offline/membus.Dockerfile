# The membus image without a Go image: the binary built on the host (`make build`, cgo, glibc
# of Debian bookworm) copied onto the debootstrapped base. Same layout as deploy/Dockerfile.
FROM membus/debian:bookworm
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data --create-home membus
COPY .build/membus /usr/local/bin/membus
USER membus
WORKDIR /data
ENV MEMBUS_DATA_DIR=/data MEMBUS_HTTP_ADDR=0.0.0.0:8080 MEMBUS_LOG_FORMAT=json
EXPOSE 8080
ENTRYPOINT ["membus"]
CMD ["up"]
