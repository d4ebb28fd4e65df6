package contentagent

import (
	"net/http"
	"path/filepath"
)

// Handler serves the pool fetcher's port (docs/design/pools.md, "The fetcher's answers"): GET /sites (every
// site's entry, sorted by id; ?wait=<etag> long-polls until any entry changes), GET /sites/{id}/revision
// (?wait=<bundle> long-polls until that site's bundle changes), GET /bundles/{digest} (only a current or previous
// bundle of a site in the index), GET /healthz (200 once the index was read: there is something to answer),
// GET /metrics.
func (p *PoolFetcher) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /sites", p.table.serveList(p.WaitTimeout))
	mux.Handle("GET /sites/{id}/revision", p.table.serveOne(p.WaitTimeout))
	mux.HandleFunc("GET /bundles/{digest}", p.serveBundle)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !p.Index.Loaded() {
			http.Error(w, "the index is not read yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.Handle("GET /metrics", p.metrics.handler())
	return mux
}

func (p *PoolFetcher) serveBundle(w http.ResponseWriter, r *http.Request) {
	digest := r.PathValue("digest")
	if !validDigest(digest) {
		http.Error(w, "not a sha256 digest", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	var id string
	if ids := p.owners[digest]; len(ids) > 0 {
		id = ids[0]
	}
	p.mu.Unlock()
	dir, err := siteDir(p.Dir, id)
	if id == "" || err != nil {
		http.Error(w, "no bundle with this digest", http.StatusNotFound)
		return
	}
	if serveBundleFile(w, r, bundleFile(filepath.Join(dir, "bundles"), digest), digest) {
		p.metrics.downloads.Inc()
	}
}
