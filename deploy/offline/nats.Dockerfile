# nats-server built from the Go module proxy on the host (static, CGO_ENABLED=0):
#   CGO_ENABLED=0 GOBIN=deploy/offline/.build go install github.com/nats-io/nats-server/v2@v2.15.2
# with busybox's wget for the compose health check.
FROM membus/debian:bookworm AS tools
RUN apt-get update && apt-get install -y --no-install-recommends busybox-static && rm -rf /var/lib/apt/lists/*

FROM scratch
COPY .build/nats-server /nats-server
COPY --from=tools /bin/busybox /bin/wget
EXPOSE 4222 6222 8222
ENTRYPOINT ["/nats-server"]
