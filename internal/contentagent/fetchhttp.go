package contentagent

import (
	"errors"
	"net/http"
	"os"
	"regexp"
	"strconv"

	"hyperstatic.dev/hyperstatic/internal/gitwebhook"
)

// Handler serves the fetcher's port for the site's pods and the operator: GET /revision (long poll with
// ?wait=<digest>), GET /bundles/<digest>, GET /healthz, GET /metrics. The webhook is on WebhookHandler, a port
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

// WebhookHandler serves POST /hooks: an authentic push (GitHub, Gitea, GitLab) for the source's repository and
// ref triggers a fetch at once; anything else triggers nothing.
func (f *Fetcher) WebhookHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/hooks", f.serveHook)
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

func (f *Fetcher) serveHook(w http.ResponseWriter, r *http.Request) {
	push, err := gitwebhook.Parse(r, f.webhookSecret(), 0)
	if err != nil {
		kind := gitwebhook.KindOf(err)
		f.metrics.webhooks.WithLabelValues(string(kind)).Inc()
		status := http.StatusBadRequest
		var werr *gitwebhook.Error
		if errors.As(err, &werr) {
			status = werr.Status()
		}
		f.Log.Info("webhook refused", "kind", kind, "error", err)
		http.Error(w, err.Error(), status)
		return
	}
	if !push.SameRepo(f.Source.URL) || !f.followsRef(push.Ref) {
		f.metrics.webhooks.WithLabelValues("ignored").Inc()
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte("not this site's repository and ref: ignored\n"))
		return
	}
	f.metrics.webhooks.WithLabelValues("accepted").Inc()
	f.Trigger(TriggerWebhook)
	_, _ = w.Write([]byte("fetch triggered\n"))
}

var fullHash = regexp.MustCompile(`^[0-9a-f]{40}$`)

// followsRef is true when a push to ref (full name) can change what the source's ref resolves to: the ref
// itself, or refs/heads|tags/<ref> for a short name. A pinned commit follows nothing.
func (f *Fetcher) followsRef(ref string) bool {
	want := f.Source.Ref
	switch {
	case fullHash.MatchString(want):
		return false
	case ref == want:
		return true
	default:
		return ref == "refs/heads/"+want || ref == "refs/tags/"+want
	}
}
