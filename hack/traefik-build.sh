#!/usr/bin/env bash
# traefik-build.sh VERSION OUT: build static Traefik VERSION from the Go module proxy into OUT, for the e2e route
# scenario (make/traefik.mk), without the ACME DNS-01 challenge providers.
#
# Why without them: Traefik reaches lego's DNS providers through one call (pkg/provider/acme/provider.go,
# dns.NewDNSChallengeProviderByName), and they bring about 950 of the build's 2,630 packages (a hundred DNS
# vendors' SDKs). Compiling them was most of the cold CI run's Traefik build (issue 45); the scenario routes
# plain HTTP through Traefik's Kubernetes providers and never asks for a certificate. So the build works on a copy
# of the module's source where that call answers "not in this build" (a configuration naming a DNS provider fails
# at startup, saying so) and the import is gone; everything else is Traefik's own source at VERSION. The edit is
# checked: if the pinned source ever stops matching, the build fails here rather than quietly building the whole.
# (Go's -overlay cannot do it: it refuses files under the module cache.)
set -euo pipefail
version=$1 out=$2
module=github.com/traefik/traefik/v3
dir=$(go mod download -json "$module@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[ -d "$dir" ] || { echo "traefik-build: no module directory for $module@$version" >&2; exit 1; }
work=$(mktemp -d); trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
cp -r "$dir" "$work/src" && chmod -R u+w "$work/src"
f=$work/src/pkg/provider/acme/provider.go
import='"github.com/go-acme/lego/v5/providers/dns"'
call='dns.NewDNSChallengeProviderByName(p.DNSChallenge.Provider)'
if [ "$(grep -cF "$import" "$f")" != 1 ] || [ "$(grep -cF "$call" "$f")" != 1 ]; then
  echo "traefik-build: $module@$version: $f no longer has exactly one DNS-provider import and call; see hack/traefik-build.sh" >&2
  exit 1
fi
grep -vF "$import" "$f" | sed "s|dns\.NewDNSChallengeProviderByName(p\.DNSChallenge\.Provider)|nil, fmt.Errorf(\"DNS-01 challenge providers are not in this build of Traefik (hyperstatic e2e, hack/traefik-build.sh): %q\", p.DNSChallenge.Provider)|" >"$f.new"
mv "$f.new" "$f"
if grep -qF "$call" "$f"; then echo "traefik-build: the DNS-provider call is still in $f" >&2; exit 1; fi
(cd "$work/src" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X $module/pkg/version.Version=$version" -o "$work/traefik" ./cmd/traefik)
mkdir -p "$(dirname "$out")" && mv "$work/traefik" "$out"
