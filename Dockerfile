# The gun and the probe in one image: `loadgen` (the entry point) and `probe`, static binaries
# (musl) built with the Rust the workspace states (Cargo.toml's rust-version), alone in an empty
# image with the CA bundle and a user of their own (uid 10001). scripts/static-build.sh makes
# the image's root; the suite runs it and starts the Kubernetes Job's pods from what it makes.
#
#   docker build -t showdown .
#   docker run --rm --network host showdown attack --rate 1000 --duration 30s http://127.0.0.1:8080/
#   docker run --rm --network host --pid host --entrypoint /usr/local/bin/probe showdown serve --port 8080
#
# The probe reads the server's /proc: it needs the host's process namespace (--pid host), and
# for on-CPU profiles CAP_PERFMON (--cap-add PERFMON). docs/guns.md says more.
FROM rust:1.94-slim-trixie AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends musl-tools binutils ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && rustup target add "$(uname -m)-unknown-linux-musl"
WORKDIR /src
COPY . .
RUN bash scripts/static-build.sh /image

FROM scratch
COPY --from=build /image/ /
USER 10001:10001
WORKDIR /tmp
ENTRYPOINT ["/usr/local/bin/loadgen"]
CMD ["--help"]
