#!/usr/bin/env bash
# smoke-image.sh: build hyperstatic/smoke:dev, a FROM scratch image holding the static binary of
# e2e/kind/smoke (used to check the Docker engine and the kind cluster). Prints the image name.
set -euo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
IMAGE=${SMOKE_IMAGE:-hyperstatic/smoke:dev}
export PATH=/usr/local/go/bin:$PATH
ctx=$(mktemp -d); trap 'rm -rf "$ctx"' EXIT
(cd "$ROOT/e2e/kind/smoke" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$ctx/smoke" .)
cp "$ROOT/e2e/kind/smoke/Dockerfile" "$ctx/"
DOCKER_BUILDKIT=0 docker build -q -t "$IMAGE" "$ctx" >/dev/null 2>&1 || DOCKER_BUILDKIT=0 docker build -t "$IMAGE" "$ctx"
echo "$IMAGE"
