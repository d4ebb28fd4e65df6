// Package poolindex is the Go form of a pool's index: the JSON shards the operator writes for a StaticSitePool,
// which the pool fetcher, the pool puller and the server (`--sites DIR`) read. The contract is
// docs/design/pools.md ("The index"); in short:
//
//   - A shard is one JSON object {version: 1, shard, sites: [...]}; the pool reads every *.json file of its index
//     directory. A site lives in exactly one shard, ShardOf(id, shards), so a change to one site rewrites one shard.
//   - A site is its id ("<namespace>.<name>"), the hosts it answers to (lowercase, no port, no trailing dot), its
//     site value (docs/design/site-value.md, the same bytes a dedicated site's --site file holds), its limits,
//     and where its content comes from (read by the fetcher only; the server ignores it).
//   - Unknown fields are refused, naming them (Parse), so a typo is never a setting silently missing; the server
//     refuses them too, except inside content.
//   - Render is pure and canonical: the same sites give the same bytes, sites sorted by id, so the operator's
//     server-side apply of an unchanged shard is a no-op.
//   - EntryRevision names one site's whole entry (id, hosts, value, limits, content) by the bytes Render writes
//     for it. A pool server pod computes the same name from the shard it reads and reports the one in effect on
//     its /sites (entryRevision), so the operator counts a pod as serving a site only when everything it placed,
//     hostnames included, is what the pod serves (internal/contract holds the two sides to one another).
//
// testdata/example.json is the example of docs/design/pools.md; this package's tests and the server's contract
// test (images/server/tests/data/pool-index-example.json, the same bytes) both accept it.
package poolindex

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
)

// Version is the index format this package reads and writes.
const Version = 1

// DefaultShards is a new pool's shard count: 16 ConfigMaps of 1 MiB hold about 30,000 sites of 500 bytes.
const DefaultShards = 16

// Shard is one index file.
type Shard struct {
	Version int    `json:"version"`
	Shard   int    `json:"shard"`
	Sites   []Site `json:"sites"`
}

// Site is one site of a pool.
type Site struct {
	// ID is "<namespace>.<name>" of the StaticSite: unique in the cluster and a safe directory name.
	ID string `json:"id"`
	// Hosts are the names the site answers to: its spec.hostnames and its Service's DNS names.
	Hosts []string `json:"hosts"`
	// Value is the site value (docs/design/site-value.md) as rendered by internal/sitevalue.
	Value json.RawMessage `json:"value"`
	// Limits bound what the site may take from the pool.
	Limits Limits `json:"limits"`
	// Content says where the fetcher gets the site's tree.
	Content Content `json:"content"`
}

// Limits are a site's share of the pool: a larger tree is refused (the site answers 503 and says why), a faster
// request rate is answered 429.
type Limits struct {
	MaxFiles          int64 `json:"maxFiles"`
	MaxBytes          int64 `json:"maxBytes"`
	RequestsPerSecond int64 `json:"requestsPerSecond"`
}

// Content is exactly one of Git or ConfigMaps.
type Content struct {
	Git        *GitContent        `json:"git,omitempty"`
	ConfigMaps []ConfigMapContent `json:"configMaps,omitempty"`
}

// GitContent is a public repository the pool fetcher follows (a site with credentials is not pooled:
// docs/design/pools.md, "Credentials").
type GitContent struct {
	URL string `json:"url"`
	// Ref is spec.content.git.ref as the site gives it: a branch, a tag or a commit, resolved as a dedicated
	// site's fetcher resolves it.
	Ref string `json:"ref"`
	// Path is the directory of the repository served; empty for its root.
	Path string `json:"path,omitempty"`
	// Interval is how often the fetcher polls without a webhook (a Go duration).
	Interval string `json:"interval"`
}

// ConfigMapContent names the mirror, in the pool's namespace, of one of a ConfigMap site's ConfigMaps
// (MirrorName), and the directory of the tree its keys appear under, as spec.content.configMaps[].pathPrefix.
type ConfigMapContent struct {
	Name       string `json:"name"`
	PathPrefix string `json:"pathPrefix,omitempty"`
}

// MirrorName is the name, in the pool's namespace, of the mirror of ConfigMap `configMap` of site `id`:
// "<pool>.c-" and 16 hex digits of the SHA-256 of "<id>/<configMap>" (names from tenants never collide with the
// pool's own objects, and a site's mirrors are found again from its spec alone).
func MirrorName(pool, id, configMap string) string {
	sum := sha256.Sum256([]byte(id + "/" + configMap))
	return pool + ".c-" + hex.EncodeToString(sum[:8])
}

// ShardOf is the shard that holds site id among n: FNV-1a 32 of the id, modulo n.
func ShardOf(id string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32() % uint32(max(n, 1)))
}

// ID is a site's id from its namespace and name.
func ID(namespace, name string) string { return namespace + "." + name }

// ServiceHosts are the DNS names of a site's Service, most qualified first: what a client in the cluster sends
// as Host when it reaches the site by its Service.
func ServiceHosts(namespace, name, clusterDomain string) []string {
	return []string{
		name + "." + namespace + ".svc." + clusterDomain,
		name + "." + namespace + ".svc",
		name + "." + namespace,
	}
}

// NormalizeHost is what the server compares: lowercase, no trailing dot.
func NormalizeHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

// Render is the canonical bytes of shard number `shard` holding sites: sorted by id, compact, no HTML escaping.
func Render(shard int, sites []Site) ([]byte, error) {
	s := Shard{Version: Version, Shard: shard, Sites: slices.Clone(sites)}
	if s.Sites == nil {
		s.Sites = []Site{}
	}
	slices.SortFunc(s.Sites, func(a, b Site) int { return strings.Compare(a.ID, b.ID) })
	return encode(s)
}

// EntryRevision is the name of site's entry: "sha256:" and the first 16 hex digits of the SHA-256 of the bytes
// Render writes for it in its shard (encoding/json writes a nested value as it writes it alone, so encoding the
// site by itself gives those bytes). The server names the entry it reads the same way.
func EntryRevision(site Site) (string, error) {
	b, err := encode(site)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:8]), nil
}

// encode is v as the index writes it: compact, no HTML escaping, no trailing newline.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Parse reads one shard, refusing unknown fields and a shard that breaks the contract (Validate).
func Parse(data []byte) (Shard, error) {
	var s Shard
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Shard{}, fmt.Errorf("index shard: %w", err)
	}
	if dec.More() {
		return Shard{}, fmt.Errorf("index shard: data after the object")
	}
	return s, s.Validate()
}

// Validate checks what JSON decoding cannot: the version, ids, hosts, limits and content, each error naming its
// path (sites[2].hosts[0]: ...).
func (s Shard) Validate() error {
	if s.Version != Version {
		return fmt.Errorf("version: %d, want %d", s.Version, Version)
	}
	ids := map[string]bool{}
	hosts := map[string]string{}
	for i, site := range s.Sites {
		at := fmt.Sprintf("sites[%d]", i)
		if err := validID(site.ID); err != nil {
			return fmt.Errorf("%s.id: %w", at, err)
		}
		if ids[site.ID] {
			return fmt.Errorf("%s.id: %q twice", at, site.ID)
		}
		ids[site.ID] = true
		if len(site.Hosts) == 0 {
			return fmt.Errorf("%s.hosts: empty", at)
		}
		for j, h := range site.Hosts {
			if h == "" || h != NormalizeHost(h) || strings.ContainsAny(h, ":/ ") {
				return fmt.Errorf("%s.hosts[%d]: %q is not a lowercase host without port or trailing dot", at, j, h)
			}
			if other, ok := hosts[h]; ok {
				return fmt.Errorf("%s.hosts[%d]: %q is also a host of %s", at, j, h, other)
			}
			hosts[h] = site.ID
		}
		if len(site.Value) == 0 || site.Value[0] != '{' {
			return fmt.Errorf("%s.value: not a JSON object", at)
		}
		if site.Limits.MaxFiles <= 0 || site.Limits.MaxBytes <= 0 || site.Limits.RequestsPerSecond <= 0 {
			return fmt.Errorf("%s.limits: maxFiles, maxBytes and requestsPerSecond must all be positive", at)
		}
		if (site.Content.Git == nil) == (len(site.Content.ConfigMaps) == 0) {
			return fmt.Errorf("%s.content: exactly one of git and configMaps", at)
		}
		if g := site.Content.Git; g != nil && (g.URL == "" || g.Ref == "") {
			return fmt.Errorf("%s.content.git: url and ref are required", at)
		}
		for j, c := range site.Content.ConfigMaps {
			if c.Name == "" {
				return fmt.Errorf("%s.content.configMaps[%d].name: empty", at, j)
			}
			if strings.HasPrefix(c.PathPrefix, "/") || slices.Contains(strings.Split(c.PathPrefix, "/"), "..") {
				return fmt.Errorf("%s.content.configMaps[%d].pathPrefix: %q must be relative without '..'", at, j, c.PathPrefix)
			}
		}
	}
	return nil
}

// validID: two DNS labels (namespace, name) joined by one dot; a name may itself hold dots (a DNS subdomain),
// the namespace may not, so the first dot splits them.
func validID(id string) error {
	ns, name, ok := strings.Cut(id, ".")
	if !ok || ns == "" || name == "" || len(id) > 253+1+63 {
		return fmt.Errorf("%q is not <namespace>.<name>", id)
	}
	for _, r := range id {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' && r != '.' {
			return fmt.Errorf("%q: only a-z, 0-9, '-' and '.'", id)
		}
	}
	if strings.Contains(id, "..") || strings.HasSuffix(id, ".") {
		return fmt.Errorf("%q: empty label", id)
	}
	return nil
}
