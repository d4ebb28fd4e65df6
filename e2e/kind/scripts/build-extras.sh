#!/usr/bin/env bash
# build-extras.sh [etcd] [coredns] [pause]: build the node's other static binaries from this repo's small Go
# modules (e2e/kind/<name>) into $CACHE_DIR/kube/<name>-<version>/<name>, skipping those already there.
# The versions pinned in make/cluster.mk win: when a module's go.mod pins another version, it is built from a
# copy with the requirement rewritten (go mod tidy, checksums verified as usual).
source "$(dirname "$0")/lib.sh"

# build_module NAME MODULE VERSION [LDFLAGS]: output path on stdout.
build_module() {
  local name=$1 module=$2 version=$3 ldflags="-s -w ${4:-}"
  local out=$CACHE_DIR/kube/$name-$version
  if [ -x "$out/$name" ]; then say "$name $version cached in $out"; return; fi
  local src=$KIND_DIR/$name
  if [ -n "$module" ] && [ "$(cd "$src" && go list -m -f '{{.Version}}' "$module")" != "$version" ]; then
    local work=$CACHE_DIR/work/$name-$version
    rm -rf "$work"; mkdir -p "$work"; cp "$src"/* "$work/"; src=$work
    (cd "$src" && go mod edit -require="$module@$version" && logged "$name-mod-tidy" env GOFLAGS=-mod=mod go mod tidy)
  fi
  mkdir -p "$out"
  say "$name $version: compiling (log: $LOG_DIR/$name-build.log)"
  (cd "$src" && logged "$name-build" env CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/.$name.tmp" .)
  mv "$out/.$name.tmp" "$out/$name"
}

for what in "${@:-etcd coredns pause}"; do
  for w in $what; do
    case $w in
      etcd)
        need ETCD_VERSION
        build_module etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION" "-X go.etcd.io/etcd/api/v3/version.GitSHA=hyperstatic" ;;
      coredns)
        need COREDNS_VERSION
        build_module coredns github.com/coredns/coredns "$COREDNS_VERSION" ;;
      pause)
        # our own source: keyed by the content of the program, not a version
        build_module pause "" "$(pause_key)" ;;
      *) echo "unknown: $w" >&2; exit 2 ;;
    esac
  done
done
