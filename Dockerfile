# Build: docker build -t signoff .
# Run:   docker run -d --name signoff -p 8080:8080 -v signoff-data:/home/nonroot/signoff -v $HOME/.config/signoff/personas:/etc/signoff/personas:ro signoff
# (the data dir is a volume: the gateway key, token secret and audit log outlive the container).
# Alone, it keeps requests and tokens in its embedded in-memory store: a restart
# loses them and the API then stays closed (serve logs TOKENS LOST). To make a
# first admin token again (no shell in the image, so with any image that has rm):
#   docker run --rm -v signoff-data:/d busybox rm /d/tokens.closed && docker restart signoff
# For a store that lasts, set SIGNOFF_REDIS_URL (as configs/deploy/ does).
# Many replicas, Redis and the egress proxy: configs/deploy/ (compose and Kubernetes).
# The API is closed (SIGNOFF_REQUIRE_TOKENS): make the first token inside the container
# (loopback, while none exists), then the agent's with it:
#   docker exec signoff signoff tokens create --name admin --scopes admin
#   docker exec -e SIGNOFF_TOKEN=<admin token> signoff signoff tokens create --name agent --scopes request,check --personas demo
# Several replicas on one Redis: give each the same SIGNOFF_TOKEN_SECRET (openssl rand -hex 32).
# Pin the gateway's key on every client (a receipt from another key is not
# believed, and a client pinned to another key refuses when the request is made):
#   docker logs signoff 2>&1 | grep 'gateway key'          # its npub
#   export SIGNOFF_GATEWAY_KEY=npub1…                      # or: echo npub1… > ~/.config/signoff/gateway.pub
# The key lives in the data volume; set SIGNOFF_NOSTR_KEY (signoff keygen --out
# gateway.key; the file's contents) to keep it across a lost volume, so the pin holds.
# The personas mounted at /etc/signoff/personas should have an owner (the
# example has none): `signoff init` on your machine, then mount
# ~/.config/signoff/personas there.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# --build-arg LIBSECP256K1=1 verifies Nostr signatures with Debian's
# libsecp256k1 (cgo, linked statically so the distroless image still runs it).
ARG LIBSECP256K1=
RUN if [ -n "$LIBSECP256K1" ]; then \
      apt-get update -qq && apt-get install -y -qq libsecp256k1-dev && \
      CGO_ENABLED=1 go build -tags libsecp256k1,netgo,osusergo -trimpath \
        -ldflags="-s -w -linkmode external -extldflags -static" -o /out/signoff ./cmd/signoff; \
    else CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/signoff ./cmd/signoff; fi
# The data dir (gateway key, token secret, audit log) is a volume; made
# here so it belongs to nonroot (a volume on a missing dir is root's).
RUN mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/signoff /usr/local/bin/signoff
COPY --from=build --chown=65532:65532 /out/data /home/nonroot/signoff
COPY configs/personas /etc/signoff/personas
ENV SIGNOFF_LISTEN=0.0.0.0:8080 \
    SIGNOFF_REQUIRE_TOKENS=true \
    SIGNOFF_PERSONAS=/etc/signoff/personas \
    SIGNOFF_DATA_DIR=/home/nonroot/signoff
USER nonroot:nonroot
VOLUME ["/home/nonroot/signoff"]
EXPOSE 8080
# No shell or curl in distroless: the binary checks itself (SIGNOFF_URL,
# default http://127.0.0.1:8080; set it if you move SIGNOFF_LISTEN's port).
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/signoff", "healthcheck", "--ready"]
ENTRYPOINT ["/usr/local/bin/signoff"]
CMD ["serve"]
