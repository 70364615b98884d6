# The AttestKit service (`attestkit serve`) as a container image: docs/container.md.
#
#   docker build -t attestkit .          (or: podman build -t attestkit .)
#   docker run --rm -p 8080:8080 -v attestkit-data:/var/lib/attestkit attestkit serve --app ABCDE12345.com.example.app
#
# Two stages: a Swift toolchain image builds a release binary with the Swift standard library and Foundation linked
# in statically, and a slim image runs it with only the C libraries and CA certificates it needs. Both base images
# are build arguments, so that a machine which cannot pull them can build on images of its own (scripts/
# container-check does: Debian bookworm made with mmdebstrap, and the host's toolchain mounted during the build).

# The image the binary is built in: any with `swift` (6.2 or newer) on the PATH, git, binutils and the C and C++
# library headers.
ARG BUILDER_IMAGE=swift:6.3-noble
# The image the binary runs in: a glibc distribution with apt-get, as recent as the builder's (the binary needs the
# builder's glibc or newer).
ARG RUNTIME_IMAGE=ubuntu:noble

# ================================
# Build image
# ================================
FROM ${BUILDER_IMAGE} AS build

# The package traits built: Hummingbird brings the service and the command line; the Vapor integration is not part
# of the binary, so it is neither fetched nor built.
ARG ATTESTKIT_TRAITS=Hummingbird

WORKDIR /build

# Dependencies first, in a layer of their own that stays cached while Package.swift and Package.resolved (when there
# is one) do not change.
COPY ./Package.* ./
RUN swift package --traits "$ATTESTKIT_TRAITS" \
        $([ -f ./Package.resolved ] && echo "--force-resolved-versions" || true) \
        resolve

COPY . .

# The release binary, with the Swift runtime and Foundation linked in: no libswiftCore.so to ship.
RUN swift build -c release --product attestkit --static-swift-stdlib --traits "$ATTESTKIT_TRAITS"

# The binary without its debug information (its symbols stay, so a crash's backtrace names the functions; about
# 130 MB instead of 220), the toolchain's static crash backtracer beside it (SWIFT_BACKTRACE below names it), and
# the resources of the package's targets if any have some.
WORKDIR /staging
RUN bin="$(swift build --package-path /build -c release --traits "$ATTESTKIT_TRAITS" --show-bin-path)" \
    && strip --strip-debug -o ./attestkit "$bin/attestkit" \
    && cp "$(dirname "$(readlink -f "$(command -v swift)")")/../libexec/swift/linux/swift-backtrace-static" ./ \
    && find -L "$bin/" -maxdepth 1 -regex '.*\.resources$' -exec cp -Ra {} ./ \;

# ================================
# Run image
# ================================
FROM ${RUNTIME_IMAGE}

# What the binary needs beyond the base image: CA certificates (TLS to Apple's services and to PostgreSQL) and the
# time zone database. glibc, libstdc++ and zlib, the libraries it still links dynamically, are in every base.
RUN export DEBIAN_FRONTEND=noninteractive DEBCONF_NONINTERACTIVE_SEEN=true \
    && apt-get -q update \
    && apt-get -q dist-upgrade -y \
    && apt-get -q install -y --no-install-recommends ca-certificates tzdata \
    && rm -rf /var/lib/apt/lists/*

# A user of its own (uid and gid 10001: above any a distribution hands out, so that a host's users do not own the
# container's files), whose working directory holds the SQLite database when SQLite is used. The secrets directory
# exists empty, so that the server starts when nothing is mounted there.
RUN groupadd --system --gid 10001 attestkit \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/attestkit --no-create-home \
        --shell /usr/sbin/nologin attestkit \
    && install -d -o 10001 -g 10001 -m 0750 /var/lib/attestkit \
    && install -d -m 0755 /etc/attestkit /run/secrets/attestkit

COPY --from=build /staging/ /usr/local/bin/

# Listen on every interface of the container (the server's own default is 127.0.0.1), and read secrets from one
# file per setting in the mounted directory (admin-token, backend-tokens, storage-password, ...).
ENV ATTESTKIT_HTTP_HOST=0.0.0.0 ATTESTKIT_SECRETS_DIR=/run/secrets/attestkit
# A crash prints a backtrace of every thread to the log, with the static backtracer: paths sanitized, and no register
# contents (a register may hold key material when the crash happens in the middle of a signature).
ENV SWIFT_BACKTRACE=enable=yes,sanitize=yes,threads=all,images=all,registers=none,interactive=no,swift-backtrace=/usr/local/bin/swift-backtrace-static

USER 10001:10001
WORKDIR /var/lib/attestkit
VOLUME ["/var/lib/attestkit"]

# The public listener (http.port); the backend listener (http.backend-port) when the configuration sets it.
EXPOSE 8080 8081

# Exec form: attestkit is PID 1 and receives SIGTERM itself (it drains for shutdown.drain-period, then exits 0).
ENTRYPOINT ["attestkit"]
CMD ["serve"]
