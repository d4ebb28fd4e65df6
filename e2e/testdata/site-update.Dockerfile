# A content update layered on a baked site: BASE_IMAGE (built by images/server/example/Dockerfile) plus the
# changed files in ./site, each with fresh brotli and gzip siblings. `make e2e-pydocs-images` uses it for the v2 of
# the Python docs image, so the rollout scenario gets a new version for the cost of encoding one page instead of
# re-encoding and re-layering the whole 67 MB tree.
ARG SERVER_IMAGE=hyperstatic/server:0.1.0
ARG BASE_IMAGE

# Stage 1: encode only the changed files. They are alone in a fresh /site, so every one of them is encoded: the
# base image's siblings of the old versions are not here to look "up to date" to precompress.
FROM ${SERVER_IMAGE} AS encode
USER 0:0
COPY site /site
RUN ["/hyperstatic-server", "precompress", "/site"]

# Stage 2: the base image with the new files and their siblings copied over the old ones (one small layer).
FROM ${BASE_IMAGE}
COPY --from=encode /site /site
