package contentagent

import (
	"net/http"
)

// Handler serves the fetcher's port for the site's pods and the operator: GET /revision (long poll with
// ?wait=<digest>), GET /bundles/<digest> (ranges too: filesinstall.go), GET /bundles/<digest>/files (its file
// list), GET /healthz, GET /metrics, POST /pin (pin.go). The webhook is on WebhookServer, a port
// of its own, so a Service (and the user's route to it) can expose /hooks and nothing else.
//
// /healthz is 200 once a bundle is published (by a fetch, or restored from the state of an earlier run) and 503
// before: a readiness probe, so the Service sends the pullers nowhere until there is something to pull. A
// later failed fetch leaves it 200 (the last good bundle is still served; /revision says why).
func (f *Fetcher) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /revision", serveRevision(f.board, f.After, f.WaitTimeout))
	mux.HandleFunc("GET /bundles/{digest}", f.serveBundle)
	mux.HandleFunc("GET /bundles/{digest}/files", f.serveFiles)
	mux.HandleFunc("POST /pin", f.servePin)
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

// serveFiles answers a bundle's file list (bundlefiles.go), production's or a preview's, immutable as the bundle.
func (f *Fetcher) serveFiles(w http.ResponseWriter, r *http.Request) {
	digest := r.PathValue("digest")
	if !validDigest(digest) {
		http.Error(w, "not a sha256 digest", http.StatusBadRequest)
		return
	}
	path := filesFile(f.BundleDir, digest)
	if !exists(path) && f.Previews.Enabled() {
		path = filesFile(f.previewBundleDir(), digest)
	}
	serveBundleFile(w, r, path, digest+"-files")
}

// serveBundle answers the bundle named by its digest. A digest names one content forever, so the answer is
// immutable; production's bundles and the previews' are both served (two directories, pruned apart); unknown
// (or pruned) digests are 404, malformed ones 400, and no other file of the directory is
// reachable.
func (f *Fetcher) serveBundle(w http.ResponseWriter, r *http.Request) {
	digest := r.PathValue("digest")
	if !validDigest(digest) {
		http.Error(w, "not a sha256 digest", http.StatusBadRequest)
		return
	}
	path := f.bundlePath(digest)
	if !exists(path) && f.Previews.Enabled() {
		path = bundleFile(f.previewBundleDir(), digest) // a preview's (previews.go)
	}
	if serveBundleFile(w, r, path, digest) {
		f.metrics.downloads.Inc()
	}
}
