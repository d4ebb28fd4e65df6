package contentagent

import (
	"errors"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"golang.org/x/net/netutil"

	"hyperstatic.dev/hyperstatic/internal/gitwebhook"
)

// The webhook port faces whoever the user routes to it (the internet, for a forge to reach it), and nothing is
// known of a request before its body is read and its signature checked. The fetcher must survive that port: an
// OOM-killed fetcher publishes nothing, and a fetcher in a crash loop keeps new server pods from starting (their
// puller waits for a bundle). So what a request can hold before it is authenticated is bounded in time and memory:
//
//   - one request, head and body, is read within WebhookTimeout (net/http's read deadline);
//   - its header block within WebhookMaxHeaderBytes (net/http answers 431 past it);
//   - at most WebhookMaxInFlight requests are handled at once, and only those read a body (gitwebhook's 1 MiB at
//     most); past the cap a request is answered 503 with Retry-After at once, before a byte of its body is read;
//   - at most WebhookMaxConns connections are open; further ones wait in the kernel's accept queue, holding no
//     memory of this process.
//
// Memory is then bounded by WebhookMaxConns × the header limit plus WebhookMaxInFlight × the body limit, whatever
// the flood. The controller's port (Handler: /revision, /bundles/, /healthz, /metrics, long-polled by the operator
// and the pullers) is another listener and another server: none of these limits, nor the connections they hold,
// touch it.
//
// 503, not 429: the cap is the receiver's, shared by every sender, and the delivery refused is as likely the
// forge's own as the flooder's. 429 would tell the forge that it sent too much; a forge treats a 4xx as a
// misconfigured hook (GitLab disabled such a hook for good after four in a row, a 5xx only for a while). A refused
// push is not lost for long either way: the next interval fetch takes it.
const (
	// DefaultWebhookTimeout bounds the reading of one request: a forge sends a few KiB at once and gives up on
	// its side after 10 s (GitHub).
	DefaultWebhookTimeout = 10 * time.Second
	// DefaultWebhookMinGap is content-agent fetch's --webhook-min-gap: the shortest interval the CRD admits
	// (spec.content.git.interval, at least 10s), so that webhooks make a fetch prompt but never more frequent
	// than a site could already ask by polling.
	DefaultWebhookMinGap = 10 * time.Second
	// WebhookMaxHeaderBytes bounds a request's header block (net/http allows 4 KiB more for its buffer). A
	// forge's delivery sends about 1 KiB of headers.
	WebhookMaxHeaderBytes = 16 << 10
	// WebhookMaxInFlight is how many deliveries are handled at once. Authentic ones take milliseconds (a
	// signature check; the fetch runs on its own), so a few are plenty for a site's pushes.
	WebhookMaxInFlight = 4
	// WebhookMaxConns bounds the connections open on the webhook port.
	WebhookMaxConns = 64
)

// resultOverloaded is the hyperstatic_git_webhook_requests_total result of a delivery refused at the cap.
const resultOverloaded = "Overloaded"

// WebhookServer serves POST /hooks (WebhookHandler) within the limits above; serve it on WebhookListener.
func (f *Fetcher) WebhookServer() *http.Server {
	return &http.Server{
		Handler:           f.WebhookHandler(),
		ReadHeaderTimeout: f.WebhookTimeout,
		ReadTimeout:       f.WebhookTimeout,
		// Counted from the end of the head: the body's read, then a line of answer. A client that does not read
		// its answers holds its connection no longer.
		WriteTimeout:   2 * f.WebhookTimeout,
		IdleTimeout:    f.WebhookTimeout,
		MaxHeaderBytes: WebhookMaxHeaderBytes,
	}
}

// WebhookListener caps the connections open on the webhook port at WebhookMaxConns: past it, Accept waits for one
// to close (each is closed within WebhookServer's deadlines).
func WebhookListener(l net.Listener) net.Listener { return netutil.LimitListener(l, WebhookMaxConns) }

// WebhookHandler serves POST /hooks: an authentic push (GitHub, Gitea, GitLab) for the source's repository and
// ref leads to a fetch (at once, or at the end of the minimum gap); anything else triggers nothing.
func (f *Fetcher) WebhookHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/hooks", f.limitInFlight(http.HandlerFunc(f.serveHook)))
	return mux
}

// limitInFlight answers 503 at once, without reading the body, when WebhookMaxInFlight deliveries are being
// handled. Retry-After is the request timeout: by then every delivery in flight has ended.
func (f *Fetcher) limitInFlight(next http.Handler) http.Handler {
	retryAfter := strconv.Itoa(int((f.WebhookTimeout + time.Second - 1) / time.Second))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case f.inFlight <- struct{}{}:
			defer func() { <-f.inFlight }()
			next.ServeHTTP(w, r)
		default:
			f.metrics.webhooks.WithLabelValues(resultOverloaded).Inc()
			h := w.Header()
			h.Set("Retry-After", retryAfter)
			// Closing keeps net/http from reading what remains of the body to reuse the connection.
			h.Set("Connection", "close")
			http.Error(w, "the webhook receiver is busy: retry later (the interval fetch takes the push meanwhile)",
				http.StatusServiceUnavailable)
		}
	})
}

func (f *Fetcher) serveHook(w http.ResponseWriter, r *http.Request) {
	ev, err := gitwebhook.ParseEvent(r, f.webhookSecret(), 0)
	if err == nil && ev.PullRequest != nil && !f.Previews.PullRequests {
		err = &gitwebhook.Error{Kind: gitwebhook.NotPush, Msg: "a pull request event: this site has no previews of them"}
	}
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
	if pr := ev.PullRequest; pr != nil {
		if !pr.SameRepo(f.Source.URL) {
			f.ignored(w)
			return
		}
		f.pullRequestClosed(pr.Ref, pr.Head, pr.Closed)
		f.metrics.webhooks.WithLabelValues("accepted").Inc()
		f.notifyPreviews()
		_, _ = w.Write([]byte("pull request event accepted: the previews follow\n"))
		return
	}
	push := *ev.Push
	production, preview := push.SameRepo(f.Source.URL) && f.followsRef(push.Ref), f.previewsRef(push)
	if !production && !preview {
		f.ignored(w)
		return
	}
	f.metrics.webhooks.WithLabelValues("accepted").Inc()
	if production {
		f.notifyPush()
	}
	if preview {
		f.notifyPreviews()
	}
	_, _ = w.Write([]byte("push accepted: a fetch follows\n"))
}

// previewsRef is true when push moved (or deleted) a branch the previews follow.
func (f *Fetcher) previewsRef(push gitwebhook.Push) bool {
	if !f.Previews.Enabled() || !push.SameRepo(f.Source.URL) {
		return false
	}
	_, ok := f.Previews.Name(push.Ref, f.productionRef())
	return ok
}

func (f *Fetcher) ignored(w http.ResponseWriter) {
	f.metrics.webhooks.WithLabelValues("ignored").Inc()
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte("not this site's repository and ref: ignored\n"))
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
