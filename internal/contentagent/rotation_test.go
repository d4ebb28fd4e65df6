package contentagent_test

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/gitsource"
	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
)

// TestSecretRotationWithoutRestart: the credentials Secret and the webhook Secret are mounted volumes that kubelet
// updates in place. One running fetcher, against the test Git server over HTTPS (the CA in the Secret's ca.crt):
// after the forge's password changes, fetches fail (AuthFailed, the last bundle kept) until the Secret is
// updated, then the next fetch succeeds; a rotation to a wrong password is AuthFailed with the last good bundle
// published; a webhook signed with the rotated webhook secret is accepted and one signed with the old one refused.
func TestSecretRotationWithoutRestart(t *testing.T) {
	srv, base, caPEM := gts.StartTLS(t, "reader", "first-password", "")
	pushAuth := &githttp.BasicAuth{Username: "reader", Password: "first-password"}
	repo := srv.NewRepo(t, base, "site.git", pushAuth)
	secretDir, hookDir := t.TempDir(), t.TempDir()
	credentials := func(password string) map[string]string {
		return map[string]string{"username": "reader", "password": password, "ca.crt": string(caPEM)}
	}
	writeSecretVolume(t, secretDir, credentials("first-password"))
	writeSecretVolume(t, hookDir, map[string]string{"token": "hook-first\n"})

	c1 := repo.Commit("v1", map[string]gts.File{"index.html": gts.Regular("v1\n")})
	repo.Push("refs/heads/main", c1, false)
	fetcher := startFetcher(t, gitsource.Source{URL: repo.URL, Ref: "main"}, nil, t.TempDir(), "127.0.0.1:0", "127.0.0.1:0", nil,
		func(f *contentagent.Fetcher) {
			f.SecretDir = secretDir
			f.WebhookSecretFile = filepath.Join(hookDir, "token")
		})
	first := fetcher.nextSync(t).rev
	if first.Commit != c1.String() || first.LastError != nil {
		t.Fatalf("first fetch: %+v, want %s", first, c1)
	}

	if code := postGitHubPush(t, fetcher.hookURL, repo.URL, "refs/heads/main", c1.String(), []byte("hook-first")); code != http.StatusOK {
		t.Fatalf("a delivery signed with the webhook secret: status %d, want 200", code)
	}
	if e := fetcher.nextSync(t); e.trigger != contentagent.TriggerWebhook || e.rev.Commit != c1.String() {
		t.Fatalf("the fetch after the webhook: %+v, want %s by the webhook", e, c1)
	}

	// The forge's password changes; the mounted Secret still has the old one.
	srv.SetCredentials("reader", "second-password", "")
	pushAuth.Password = "second-password"
	c2 := repo.Commit("v2", map[string]gts.File{"index.html": gts.Regular("v2\n")}, c1)
	repo.Push("refs/heads/main", c2, false)
	fetcher.ticks <- time.Now()
	wantKept(t, fetcher.nextSync(t).rev, first, gitsource.AuthFailed)

	// kubelet updates the volume: the next fetch uses it, with no restart.
	writeSecretVolume(t, secretDir, credentials("second-password"))
	fetcher.ticks <- time.Now()
	second := fetcher.nextSync(t).rev
	if second.Commit != c2.String() || second.LastError != nil {
		t.Fatalf("after the Secret's update: %+v, want %s and no error", second, c2)
	}

	// A rotation to credentials the forge refuses: AuthFailed, the last good bundle stays published.
	writeSecretVolume(t, secretDir, credentials("not-the-password"))
	fetcher.ticks <- time.Now()
	wantKept(t, fetcher.nextSync(t).rev, second, gitsource.AuthFailed)
	writeSecretVolume(t, secretDir, credentials("second-password"))

	// The webhook Secret is rotated: deliveries signed with the old secret are refused, the new one is accepted.
	writeSecretVolume(t, hookDir, map[string]string{"token": "hook-second\n"})
	c3 := repo.Commit("v3", map[string]gts.File{"index.html": gts.Regular("v3\n")}, c2)
	repo.Push("refs/heads/main", c3, false)
	if code := postGitHubPush(t, fetcher.hookURL, repo.URL, "refs/heads/main", c3.String(), []byte("hook-first")); code != http.StatusUnauthorized {
		t.Errorf("a delivery signed with the old webhook secret: status %d, want 401", code)
	}
	if code := postGitHubPush(t, fetcher.hookURL, repo.URL, "refs/heads/main", c3.String(), []byte("hook-second")); code != http.StatusOK {
		t.Fatalf("a delivery signed with the new webhook secret: status %d, want 200", code)
	}
	if e := fetcher.nextSync(t); e.trigger != contentagent.TriggerWebhook || e.rev.Commit != c3.String() || e.rev.LastError != nil {
		t.Fatalf("the fetch after the webhook: %+v, want %s by the webhook", e, c3)
	}
}

// wantKept checks that a failed attempt kept the published revision and reported reason.
func wantKept(t *testing.T, got, published contentagent.Revision, reason gitsource.Reason) {
	t.Helper()
	if got.LastError == nil || got.LastError.Reason != string(reason) {
		t.Fatalf("attempt: %+v, want a %s error", got, reason)
	}
	if got.Commit != published.Commit || got.Digest != published.Digest {
		t.Fatalf("published %s (%s) after the failure, want %s (%s) kept", got.Commit, got.Digest, published.Commit, published.Digest)
	}
	t.Logf("%s: %s", got.LastError.Reason, got.LastError.Message)
}
