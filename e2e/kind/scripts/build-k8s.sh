#!/usr/bin/env bash
# build-k8s.sh CMD...: build Kubernetes commands (kube-apiserver, kubelet, ...) at $K8S_VERSION from the Go
# module proxy into $CACHE_DIR/kube/k8s-$K8S_VERSION/, skipping those already there.
#
# k8s.io/kubernetes' own go.mod replaces its 31 staging modules (k8s.io/api, client-go, ...) with ./staging
# paths that its module zip lacks, so it cannot be built as a dependency directly. A generated wrapper module
# requires k8s.io/kubernetes and replaces each staging module with its published v0.X.Y release; everything
# else resolves through the normal checksum-verified module graph (GOSUMDB stays on).
# The -X version stamps are mandatory: kubeadm derives the control-plane image tags from its own version.
source "$(dirname "$0")/lib.sh"
need K8S_VERSION
OUT=$CACHE_DIR/kube/k8s-$K8S_VERSION
WORK=$CACHE_DIR/work/k8s-wrapper-$K8S_VERSION
mkdir -p "$OUT" "$WORK"

todo=()
for c in "$@"; do [ -x "$OUT/$c" ] || todo+=("$c"); done
if [ ${#todo[@]} = 0 ]; then say "kubernetes $K8S_VERSION: $* cached in $OUT"; exit 0; fi

staging_version=v0${K8S_VERSION#v1} # k8s.io/api etc. are published as v0.<minor>.<patch>
cd "$WORK"
if [ ! -f go.sum ] || ! grep -q "k8s.io/kubernetes $K8S_VERSION" go.mod 2>/dev/null; then
  say "kubernetes $K8S_VERSION: generating the wrapper module in $WORK"
  modfile=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | jq -r .GoMod)
  staging=$(awk '$2 == "=>" && $3 ~ /^\.\/staging\// {print $1}' "$modfile")
  {
    printf 'module hyperstatic.local/k8sbuild\n\ngo 1.24.0\n\n'
    printf 'godebug default=go1.24\n\n' # the GODEBUG defaults upstream Kubernetes builds with
    printf 'require k8s.io/kubernetes %s\n\nreplace (\n' "$K8S_VERSION"
    for m in $staging; do printf '\t%s => %s %s\n' "$m" "$m" "$staging_version"; done
    printf ')\n'
  } >go.mod
  {
    printf '//go:build tools\n\npackage tools\n\nimport (\n'
    for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubeadm kubectl; do
      printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c"
    done
    printf ')\n'
  } >tools.go
  rm -f go.sum
  logged k8s-mod-tidy env GOFLAGS=-mod=mod go mod tidy
fi

major=${K8S_VERSION#v}; major=${major%%.*}
minor=${K8S_VERSION#v*.}; minor=${minor%%.*}
ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor"
  ldflags+=" -X $p.gitCommit=0000000000000000000000000000000000000000 -X $p.gitTreeState=clean"
  ldflags+=" -X $p.buildDate=1970-01-01T00:00:00Z"
done
pkgs=(); for c in "${todo[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
tmp=$(mktemp -d "$OUT/.build.XXXXXX"); trap 'rm -rf "$tmp"' EXIT
say "kubernetes $K8S_VERSION: compiling ${todo[*]} (log: $LOG_DIR/k8s-build.log)"
logged k8s-build env CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/" "${pkgs[@]}"
for c in "${todo[@]}"; do mv "$tmp/$c" "$OUT/$c"; done
"$OUT/${todo[0]}" --version 2>/dev/null | head -1 || true
