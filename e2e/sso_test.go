//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/sso"
	"hyperstatic.dev/hyperstatic/internal/ssosite"
)

// checkSignInSite: a site with a signIn rule (spec.server.access.sso) in a real cluster: once its Secret exists the
// pod runs the login agent beside the server (restricted, read-only, non-root, as the kubelet starts it), the
// server keeps the protected page to sessions — a page load without one is sent to the agent's login on the sso
// port of the site's hostname, a session cookie signed with the Secret's key for a member of the rule's group is
// served the page privately, one for another group is refused — and the agent answers on the Service's sso port.
// The login itself against a real IdP is internal/sso's test with Dex (make go-test-sso); here no IdP is needed.
func checkSignInSite(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	key := []byte("e2e-session-key-0123456789abcdef")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "private-sso"}, Data: map[string][]byte{
		v1alpha1.SSOClientSecretKey: []byte("client-secret"),
		v1alpha1.SSOSessionKeysKey:  []byte(base64.StdEncoding.EncodeToString(key) + "\n"),
	}}
	if err := k8s.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	site := newSite(ns, "private", v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "pages"}}}, "100m")
	site.Spec.Hostnames = []v1alpha1.Hostname{"private.e2e.example"}
	site.Spec.Server.Access = &v1alpha1.AccessSpec{
		SSO:   &v1alpha1.SSOSpec{IssuerURL: "http://idp.invalid", ClientID: "private", SecretName: "private-sso"},
		Rules: []v1alpha1.AccessRule{{PathPrefix: "/page.html", SignIn: &v1alpha1.SignIn{Groups: []string{"eng"}}}},
	}
	if err := k8s.Create(ctx, site); err != nil {
		t.Fatalf("create StaticSite: %v", err)
	}
	site = waitSiteReady(t, ns, "private", 3*time.Minute)
	for _, c := range site.Status.Conditions {
		if c.Type == v1alpha1.ConditionAccessApplied && (c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonSSOAccepted) {
			t.Errorf("AccessApplied %s %s: %s", c.Status, c.Reason, c.Message)
		}
	}
	pods := sitePods(ctx, t, ns, "private")
	if len(pods) != 1 {
		t.Fatalf("want 1 pod, got %d", len(pods))
	}
	var agentReady bool
	for _, s := range pods[0].Status.ContainerStatuses {
		if s.Name == ssosite.ContainerName {
			agentReady = s.Started != nil && *s.Started && s.State.Running != nil
		}
	}
	if !agentReady {
		t.Fatalf("the login agent is not running: %+v", pods[0].Status.ContainerStatuses)
	}

	web := startPortForward(t, ns, "svc/private", 80) // spec.service.port's default
	noFollow := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	type answer struct {
		StatusCode int
		Header     http.Header
	}
	get := func(addr, path, cookie string) (answer, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
		req.Header.Set("Accept", "text/html")
		if cookie != "" {
			req.Header.Set("Cookie", sso.CookieName+"="+cookie)
		}
		res, err := noFollow.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return answer{res.StatusCode, res.Header}, string(b)
	}
	login := "http://private.e2e.example:8444/.hyperstatic/sso/login"
	if res, _ := get(web.addr(), "/page.html", ""); res.StatusCode != http.StatusFound || !strings.HasPrefix(res.Header.Get("Location"), login+"?rd=") {
		t.Errorf("a page load without a session: %d to %q, want 302 to %s?rd=...", res.StatusCode, res.Header.Get("Location"), login)
	}
	keys := sso.Keys{key}
	later := time.Now().Add(time.Hour)
	res, body := get(web.addr(), "/page.html", keys.Mint(sso.Session{Email: "jane@example.com", Groups: []string{"eng"}, Expires: later}))
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "<p>page</p>") || !strings.Contains(res.Header.Get("Cache-Control"), "private") {
		t.Errorf("a member of eng: %d, Cache-Control %q, %q", res.StatusCode, res.Header.Get("Cache-Control"), body)
	}
	if res, _ := get(web.addr(), "/page.html", keys.Mint(sso.Session{Email: "joe@example.com", Groups: []string{"ops"}, Expires: later})); res.StatusCode != http.StatusForbidden {
		t.Errorf("a member of ops only: %d, want 403", res.StatusCode)
	}
	if res, _ := get(web.addr(), "/index.html", ""); res.StatusCode != http.StatusOK {
		t.Errorf("a public page: %d, want 200", res.StatusCode)
	}
	agent := startPortForward(t, ns, "svc/private", v1alpha1.SSOPort)
	if res, body := get(agent.addr(), "/healthz", ""); res.StatusCode != http.StatusOK {
		t.Errorf("the agent on the Service's sso port: %d %q", res.StatusCode, body)
	}
	// A login reads the mounted session keys (500 if the agent cannot), then asks the IdP, which this issuer is
	// not: 502 says the agent read its Secret as the non-root user it runs as.
	if res, body := get(agent.addr(), ssosite.Prefix+"/login?rd=/page.html", ""); res.StatusCode != http.StatusBadGateway {
		t.Errorf("a login with an unreachable IdP: %d %q, want 502 (the keys read, the IdP not reached)", res.StatusCode, body)
	}
	t.Logf("signIn site: agent running, 302 to the login without a session, 200 private with one, 403 for another group")
}
