# The gun and the probe in one image: `loadgen` (the entry point) and `probe`, built with the
# Rust the workspace states (Cargo.toml's rust-version), run as a user of their own.
#
#   docker build -t showdown .
#   docker run --rm --network host showdown attack --rate 1000 --duration 30s http://127.0.0.1:8080/
#   docker run --rm --network host --pid host --entrypoint probe showdown serve --port 8080
#
# The probe reads the server's /proc: it needs the host's process namespace (--pid host), and
# for on-CPU profiles CAP_PERFMON (--cap-add PERFMON). docs/guns.md says more.
FROM rust:1.94-slim-trixie AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p loadgen -p probe

FROM debian:trixie-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --no-create-home showdown
COPY --from=build /src/target/release/loadgen /src/target/release/probe /usr/local/bin/
USER showdown
WORKDIR /tmp
ENTRYPOINT ["loadgen"]
CMD ["--help"]
