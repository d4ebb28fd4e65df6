package contentagent

import (
	"errors"
	"net/http"
	"os"
	"strconv"
)

// Handler serves the fetcher's port for the site's pods and the operator: GET /revision (long poll with
// ?wait=<digest>), GET /bundles/<digest>, GET /healthz, GET /metrics. The webhook is on WebhookServer, a port
// of its own, so a Service (and the user's route to it) can expose /hooks and nothing else.
//
// /healthz is 200 once a bundle is published (by a fetch, or restored from the state of an earlier run) and 503
// before: a readiness probe, so the Service sends the pullers nowhere until there is something to pull. A
// later failed fetch leaves it 200 (the last good bundle is still served; /revision says why).
func (f *Fetcher) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /revision", serveRevision(f.board, f.After, f.WaitTimeout))
	mux.HandleFunc("GET /bundles/{digest}", f.serveBundle)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if rev, _ := f.board.get(); rev.Digest == "" {
			http.Error(w, "no bundle published yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.Handle("GET /metrics", f.metrics.handler())
	return mux
}

// serveBundle answers the bundle named by its digest. A digest names one content forever, so the answer is
// immutable; unknown (or pruned) digests are 404, malformed ones 400, and no other file of the directory is
// reachable.
func (f *Fetcher) serveBundle(w http.ResponseWriter, r *http.Request) {
	digest := r.PathValue("digest")
	if !validDigest(digest) {
		http.Error(w, "not a sha256 digest", http.StatusBadRequest)
		return
	}
	file, err := os.Open(f.bundlePath(digest))
	if errors.Is(err, os.ErrNotExist) {
		http.Error(w, "no bundle with this digest", http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, "reading the bundle", http.StatusInternalServerError)
		return
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		http.Error(w, "reading the bundle", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/x-tar")
	h.Set("Content-Length", strconv.FormatInt(info.Size(), 10))
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("ETag", `"`+digest+`"`)
	f.metrics.downloads.Inc()
	http.ServeContent(w, r, "", info.ModTime(), file)
}
