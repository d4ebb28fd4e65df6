package sso

import (
	"context"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Config is one site's sign-in: its IdP and client, its keys and where it lives.
type Config struct {
	// Issuer is the IdP's issuer URL; its discovery document names the endpoints and keys.
	Issuer string
	// ClientID and ClientSecretFile are the site's client at the IdP (the secret is read at every login, so a
	// rotated Secret applies without a restart).
	ClientID         string
	ClientSecretFile string
	// KeysFile holds the session keys (see the package contract).
	KeysFile string
	// SiteURL is the site as users reach it (https://docs.example.com): rd paths are relative to it, and an
	// https one makes the cookies Secure.
	SiteURL string
	// CallbackURL is the redirect URI registered at the IdP; default SiteURL + Prefix + "/callback".
	CallbackURL string
	// Prefix is where the handlers live on the site, "/.hyperstatic/sso" by default.
	Prefix string
	// SessionTTL is how long a session cookie is good for (8 hours by default).
	SessionTTL time.Duration
	// GroupsClaim is the ID token's claim holding the groups ("groups").
	GroupsClaim string
	// KeepGroups, when set, are the only groups put in the cookie (those the site's rules name), so a user of
	// hundreds of groups still fits in one.
	KeepGroups []string
	// Now is the clock (time.Now by default).
	Now func() time.Time
}

// Handler serves the login, callback and logout endpoints of one site.
type Handler struct {
	cfg Config
	mu  sync.Mutex
	p   *oidc.Provider
}

// New checks cfg and fills its defaults. The IdP is contacted on the first login (and again after a failure), so
// an IdP that is down at start does not stop the agent.
func New(cfg Config) (*Handler, error) {
	if cfg.Issuer == "" || cfg.ClientID == "" || cfg.KeysFile == "" || cfg.SiteURL == "" {
		return nil, errors.New("sso: issuer, client ID, keys file and site URL are required")
	}
	u, err := url.Parse(cfg.SiteURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("sso: site URL %q: an http(s) origin such as https://docs.example.com", cfg.SiteURL)
	}
	cfg.SiteURL = strings.TrimSuffix(cfg.SiteURL, "/")
	if cfg.Prefix == "" {
		cfg.Prefix = "/.hyperstatic/sso"
	}
	if cfg.CallbackURL == "" {
		cfg.CallbackURL = cfg.SiteURL + cfg.Prefix + "/callback"
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 8 * time.Hour
	}
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = "groups"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if _, err := ReadKeys(cfg.KeysFile); err != nil {
		return nil, fmt.Errorf("sso: keys file %s: %w", cfg.KeysFile, err)
	}
	return &Handler{cfg: cfg}, nil
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Nothing the agent answers may be stored by a shared cache.
	w.Header().Set("Cache-Control", "no-store")
	switch strings.TrimPrefix(r.URL.Path, h.cfg.Prefix) {
	case "/login":
		h.login(w, r)
	case "/callback":
		h.callback(w, r)
	case "/logout":
		h.logout(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (h *Handler) provider(ctx context.Context) (*oidc.Provider, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.p == nil {
		// The provider keeps using this context for its key set: not the request's.
		p, err := oidc.NewProvider(context.WithoutCancel(ctx), h.cfg.Issuer)
		if err != nil {
			return nil, err
		}
		h.p = p
	}
	return h.p, nil
}

func (h *Handler) oauth2(ctx context.Context) (*oauth2.Config, *oidc.Provider, error) {
	p, err := h.provider(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("the identity provider %s: %w", h.cfg.Issuer, err)
	}
	secret := ""
	if h.cfg.ClientSecretFile != "" {
		b, err := os.ReadFile(h.cfg.ClientSecretFile)
		if err != nil {
			return nil, nil, fmt.Errorf("client secret: %w", err)
		}
		secret = strings.TrimSpace(string(b))
	}
	return &oauth2.Config{
		ClientID:     h.cfg.ClientID,
		ClientSecret: secret,
		Endpoint:     p.Endpoint(),
		RedirectURL:  h.cfg.CallbackURL,
		Scopes:       []string{oidc.ScopeOpenID, "email", "profile", "groups"},
	}, p, nil
}

func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	rd := safeRD(r.URL.Query().Get("rd"))
	keys, err := ReadKeys(h.cfg.KeysFile)
	if err != nil {
		h.fail(w, http.StatusInternalServerError, "the session keys cannot be read", err, rd)
		return
	}
	oc, _, err := h.oauth2(r.Context())
	if err != nil {
		h.fail(w, http.StatusBadGateway, "the identity provider cannot be reached", err, rd)
		return
	}
	f := flow{State: random(), Nonce: random(), Verifier: oauth2.GenerateVerifier(), RD: rd,
		Expires: h.cfg.Now().Add(flowTTL)}
	h.setCookie(w, flowCookie(f.State), keys.sealFlow(f), flowTTL)
	http.Redirect(w, r, oc.AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier)),
		http.StatusFound)
}

func (h *Handler) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	if len(state) < 12 {
		h.fail(w, http.StatusBadRequest, "this sign-in link is not one this site started", nil, "/")
		return
	}
	keys, err := ReadKeys(h.cfg.KeysFile)
	if err != nil {
		h.fail(w, http.StatusInternalServerError, "the session keys cannot be read", err, "/")
		return
	}
	c, err := r.Cookie(flowCookie(state))
	var f flow
	ok := err == nil
	if ok {
		f, ok = keys.openFlow(c.Value, h.cfg.Now())
	}
	if !ok || f.State != state {
		h.fail(w, http.StatusBadRequest, "this sign-in expired or was not started in this browser", nil, "/")
		return
	}
	h.setCookie(w, flowCookie(state), "", -1)
	if e := q.Get("error"); e != "" {
		h.fail(w, http.StatusForbidden, "the identity provider refused the sign-in: "+e+" "+q.Get("error_description"), nil, f.RD)
		return
	}
	oc, p, err := h.oauth2(r.Context())
	if err != nil {
		h.fail(w, http.StatusBadGateway, "the identity provider cannot be reached", err, f.RD)
		return
	}
	tok, err := oc.Exchange(r.Context(), q.Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		h.fail(w, http.StatusBadGateway, "the identity provider did not accept the sign-in code", err, f.RD)
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := p.VerifierContext(r.Context(), &oidc.Config{ClientID: h.cfg.ClientID, Now: h.cfg.Now}).Verify(r.Context(), raw)
	if err != nil || idt.Nonce != f.Nonce {
		if err == nil {
			err = errors.New("nonce mismatch")
		}
		h.fail(w, http.StatusBadGateway, "the identity provider's ID token is not valid", err, f.RD)
		return
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		h.fail(w, http.StatusBadGateway, "the identity provider's ID token is not valid", err, f.RD)
		return
	}
	s := Session{Expires: h.cfg.Now().Add(h.cfg.SessionTTL)}
	if v, _ := claims["email_verified"].(bool); v {
		s.Email, _ = claims["email"].(string)
	}
	gs, _ := claims[h.cfg.GroupsClaim].([]any)
	for _, g := range gs {
		if g, ok := g.(string); ok && (len(h.cfg.KeepGroups) == 0 || slices.Contains(h.cfg.KeepGroups, g)) {
			s.Groups = append(s.Groups, g)
		}
	}
	v := keys.Mint(s)
	if len(v) > MaxCookieValue {
		h.fail(w, http.StatusInternalServerError, fmt.Sprintf("your account's %d groups do not fit in a cookie: "+
			"the site's operator can keep only the groups its rules name", len(s.Groups)), nil, f.RD)
		return
	}
	h.setCookie(w, CookieName, v, h.cfg.SessionTTL)
	slog.Info("signed in", "subject", idt.Subject, "groups", len(s.Groups))
	http.Redirect(w, r, h.cfg.SiteURL+f.RD, http.StatusFound)
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	h.setCookie(w, CookieName, "", -1)
	http.Redirect(w, r, h.cfg.SiteURL+safeRD(r.URL.Query().Get("rd")), http.StatusFound)
}

// setCookie sets (maxAge > 0) or clears (maxAge < 0) a cookie for the whole site: HttpOnly (no script reads
// it), SameSite=Lax (sent on the IdP's redirect back, a top-level GET, not on cross-site subrequests), Secure on
// an https site. No Domain: the host alone, never its subdomains.
func (h *Handler) setCookie(w http.ResponseWriter, name, value string, maxAge time.Duration) {
	c := &http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: strings.HasPrefix(h.cfg.SiteURL, "https://"), MaxAge: int(maxAge / time.Second)}
	if maxAge < 0 {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

// fail answers a login that cannot go on with a page saying why and a way to try again, and logs the cause (the
// page never shows it: it may name internals).
func (h *Handler) fail(w http.ResponseWriter, status int, why string, cause error, rd string) {
	slog.Warn("sign-in failed", "status", status, "why", why, "error", cause)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	again := h.cfg.Prefix + "/login?rd=" + url.QueryEscape(rd)
	fmt.Fprintf(w, "<!doctype html><title>Sign-in failed</title><h1>Sign-in failed</h1><p>%s.</p>"+
		"<p><a href=\"%s\">Try again</a></p>\n", html.EscapeString(why), html.EscapeString(again))
}
