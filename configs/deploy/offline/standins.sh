#!/usr/bin/env bash
# Local stand-ins for the base images the Dockerfile and the compose file
# name, for a machine whose Docker daemon can reach no image registry (this
# project's build machines reach Debian's package mirror and the Go module
# proxy only). With a registry, do not use this: pull the real images.
#
# It makes, tagged with the exact names the files use:
#   golang:1.26            Debian bookworm (minbase + git, gcc, libc6-dev, make,
#                          pkg-config, curl, ca-certificates, tzdata) with this machine's
#                          /usr/local/go; PATH, GOPATH=/go and WORKDIR /go as in
#                          the official image. Its CA bundle is this machine's
#                          (/etc/ssl/certs/ca-certificates.crt, or HOST_CA_BUNDLE):
#                          where the way out is through a TLS-inspecting proxy, the
#                          build's `go mod download` trusts what the host trusts.
#   gcr.io/distroless/static-debian12:nonroot
#                          FROM scratch: /etc/passwd and /etc/group with root,
#                          nobody and nonroot (65532), /home/nonroot (65532, 0700),
#                          /tmp (1777), CA certificates, tzdata, /etc/os-release;
#                          USER 65532, WORKDIR /home/nonroot, SSL_CERT_FILE, as
#                          distroless's.
#   redis:7-alpine         Debian bookworm + Debian's redis-server and redis-cli
#                          (7.0), WORKDIR /data as a volume, `redis-server` on PATH,
#                          and an entrypoint that, like the official one, runs
#                          redis-server when the first argument starts with "-".
#                          Not Alpine, and it runs as root: the official image's
#                          entrypoint drops to the redis user.
#
# Usage (root, with debootstrap installed): configs/deploy/offline/standins.sh [golang] [distroless] [redis]
# (none: all three).
# MIRROR picks the Debian mirror (default: the first URI in /etc/apt/sources*),
# WORK the scratch dir (default /var/tmp/signoff-standins, removed at the end
# unless KEEP=1). Needs a Go in /usr/local/go.
set -euo pipefail

WORK=${WORK:-/var/tmp/signoff-standins}
SUITE=bookworm
if [[ -z "${MIRROR:-}" ]]; then
  MIRROR=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null |
    grep -oE '^(URIs:|deb) +https?://[^ ]+/debian/?( |$)' | awk '{print $2; exit}' || true)
fi
: "${MIRROR:?no Debian mirror found in /etc/apt/sources*: set MIRROR}"
GOROOT_SRC=${GOROOT_SRC:-/usr/local/go}
[[ -x $GOROOT_SRC/bin/go ]] || { echo "no Go at $GOROOT_SRC" >&2; exit 1; }
mkdir -p "$WORK/cache"

# debootstrap DIR PACKAGES: a minbase bookworm rootfs with PACKAGES, apt lists dropped.
rootfs() {
  local dir=$1 include=$2
  rm -rf "$dir"
  debootstrap --variant=minbase --cache-dir="$WORK/cache" --include="$include" \
    "$SUITE" "$dir" "$MIRROR" >"$dir.log" 2>&1 || { tail -20 "$dir.log" >&2; exit 1; }
  rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/*.bin
}

want() { local x=$1; shift; [[ $# -eq 0 || " $* " == *" $x "* ]]; }
ONLY=("$@") # none: all three

make_golang() {
  echo "golang:1.26 (Go $("$GOROOT_SRC/bin/go" env GOVERSION), mirror $MIRROR)"
  rootfs "$WORK/golang" ca-certificates,curl,git,gcc,libc6-dev,make,pkg-config,tzdata
  cp -a "$GOROOT_SRC" "$WORK/golang/usr/local/go"
  cp "${HOST_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}" "$WORK/golang/etc/ssl/certs/ca-certificates.crt"
  mkdir -p "$WORK/golang/go/bin" "$WORK/golang/go/src" && chmod -R 1777 "$WORK/golang/go"
  tar -C "$WORK/golang" --numeric-owner -c . | docker import \
    --change 'ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV GOPATH=/go' \
    --change 'ENV GOTOOLCHAIN=local' \
    --change 'WORKDIR /go' \
    --change 'CMD ["bash"]' \
    - golang:1.26
}

# The redis rootfs also gives distroless its CA bundle, tzdata and os-release.
redis_rootfs() {
  [[ -n ${redis_made:-} ]] || rootfs "$WORK/redis" redis-server,redis-tools,ca-certificates,tzdata
  redis_made=1
}

make_redis() {
  echo "redis:7-alpine"
  redis_rootfs
  mkdir -p "$WORK/redis/data"
  # As the official image's docker-entrypoint.sh: arguments that start with
  # "-" are redis-server's (Kubernetes' args: ["--requirepass", …]).
  cat >"$WORK/redis/usr/local/bin/docker-entrypoint.sh" <<'EOF2'
#!/bin/sh
case "$1" in -*|*.conf) set -- redis-server "$@" ;; esac
exec "$@"
EOF2
  chmod 755 "$WORK/redis/usr/local/bin/docker-entrypoint.sh"
  tar -C "$WORK/redis" --numeric-owner -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'WORKDIR /data' \
    --change 'VOLUME /data' \
    --change 'EXPOSE 6379' \
    --change 'ENTRYPOINT ["docker-entrypoint.sh"]' \
    --change 'CMD ["redis-server"]' \
    - redis:7-alpine
}

make_distroless() {
  echo "gcr.io/distroless/static-debian12:nonroot"
  redis_rootfs
  local d=$WORK/distroless
  rm -rf "$d" && mkdir -p "$d"/{etc/ssl/certs,usr/share,home/nonroot,root,tmp,var}
  cat >"$d/etc/passwd" <<'EOF2'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
EOF2
  cat >"$d/etc/group" <<'EOF2'
root:x:0:
nobody:x:65534:
tty:x:5:
staff:x:50:
nonroot:x:65532:
EOF2
  cp "$WORK/redis/etc/os-release" "$d/etc/os-release"
  cp "$WORK/redis/etc/ssl/certs/ca-certificates.crt" "$d/etc/ssl/certs/"
  cp -a "$WORK/redis/usr/share/zoneinfo" "$d/usr/share/"
  chown 65532:65532 "$d/home/nonroot" && chmod 0700 "$d/home/nonroot" "$d/root"
  chmod 1777 "$d/tmp"
  tar -C "$d" --numeric-owner -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
    --change 'USER 65532' \
    --change 'WORKDIR /home/nonroot' \
    - gcr.io/distroless/static-debian12:nonroot
}

want redis "${ONLY[@]}" && make_redis
want distroless "${ONLY[@]}" && make_distroless
want golang "${ONLY[@]}" && make_golang

[[ ${KEEP:-} == 1 ]] || rm -rf "$WORK/golang" "$WORK/redis" "$WORK/distroless"
docker images --format '{{.Repository}}:{{.Tag}}  {{.Size}}' |
  grep -E '^(golang:1.26|redis:7-alpine|gcr.io/distroless/static-debian12:nonroot) '
