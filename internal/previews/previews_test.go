package previews

import (
	"strings"
	"testing"
	"time"
)

func TestName(t *testing.T) {
	s := Settings{PullRequests: true, Branches: []string{"feature/*", "preview-*", "Docs*"}}
	cases := []struct {
		ref, want string
		ok        bool
	}{
		{"refs/pull/42/head", "pr-42", true},
		{"refs/merge-requests/7/head", "mr-7", true},
		{"refs/pull/42/merge", "", false},
		{"refs/pull/042/head", "", false},
		{"refs/heads/main", "", false}, // production
		{"refs/heads/preview-login", "preview-login", true},
		{"refs/heads/feature/a/b", "", false}, // * does not cross a /
		{"refs/tags/preview-1", "", false},
	}
	for _, c := range cases {
		got, ok := s.Name(c.ref, "refs/heads/main")
		if got != c.want || ok != c.ok {
			t.Errorf("Name(%s) = %q, %t; want %q, %t", c.ref, got, ok, c.want, c.ok)
		}
	}
	// Lossy slugs get the ref's digest: stable, distinct, valid.
	seen := map[string]string{}
	for _, ref := range []string{"refs/heads/feature/login", "refs/heads/feature/Login", "refs/heads/feature/LOGIN",
		"refs/heads/preview-" + strings.Repeat("x", 40), "refs/heads/preview-" + strings.Repeat("x", 41),
		"refs/heads/Docs--v2", "refs/heads/feature/pr-42", "refs/heads/preview--"} {
		name, ok := s.Name(ref, "refs/heads/main")
		if !ok || !ValidName(name) {
			t.Fatalf("%s: %q (%t) is not a valid name", ref, name, ok)
		}
		if other, dup := seen[name]; dup {
			t.Fatalf("%s and %s share the name %s", ref, other, name)
		}
		seen[name] = ref
		if again, _ := s.Name(ref, "refs/heads/main"); again != name {
			t.Fatalf("%s: named %s then %s", ref, name, again)
		}
	}
	if n, _ := s.Name("refs/heads/feature/login", ""); !strings.HasPrefix(n, "feature-login-") || len(n) != len("feature-login-")+6 {
		t.Fatalf("feature/login named %q", n)
	}
	// A branch shaped like a request never takes its name.
	p := Settings{Branches: []string{"*"}}
	if n, _ := p.Name("refs/heads/pr-42", ""); n == "pr-42" {
		t.Fatal("branch pr-42 took pull request 42's name")
	}
	if _, ok := (Settings{Branches: []string{"*"}}).Name("refs/pull/1/head", ""); ok {
		t.Fatal("a pull request previewed without pullRequests")
	}
	for _, bad := range []string{"", "-a", "a-", "a--b", "A", strings.Repeat("a", 32), "a.b", "a/b"} {
		if ValidName(bad) {
			t.Errorf("ValidName(%q)", bad)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, s := range []Settings{{Branches: []string{"["}}, {Branches: []string{""}}, {TTL: -time.Second}, {Max: MaxMax + 1}, {Max: -1}} {
		if s.Validate() == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	if err := (Settings{PullRequests: true, Branches: []string{"f/*"}, TTL: time.Hour, Max: 3}).Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestPlan(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	s := Settings{PullRequests: true, Branches: []string{"feature-*"}, TTL: time.Hour, Max: 3}
	refs := map[string]string{
		"refs/heads/main":          "m",
		"refs/pull/1/head":         "a1",
		"refs/pull/2/head":         "a2",
		"refs/pull/10/head":        "a10",
		"refs/heads/feature-x":     "fx",
		"refs/merge-requests/3/hd": "no",
	}
	names := func(cs []Candidate) (out []string) {
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	// Fresh: the highest requests first, then branches; the rest skipped.
	p := s.PlanFor(refs, "refs/heads/main", nil, nil, now)
	if got := strings.Join(names(p.Previews), ","); got != "pr-10,pr-2,pr-1" || p.Skipped != 1 {
		t.Fatalf("fresh plan %s, skipped %d", got, p.Skipped)
	}
	// Kept previews keep their places against newer ones.
	kept := []Kept{{Name: "feature-x", Ref: "refs/heads/feature-x", Commit: "fx", Since: now}}
	p = s.PlanFor(refs, "refs/heads/main", kept, nil, now)
	if got := strings.Join(names(p.Previews), ","); got != "feature-x,pr-10,pr-2" || p.Skipped != 1 {
		t.Fatalf("plan with a kept branch %s, skipped %d", got, p.Skipped)
	}
	// The TTL ends a commit's preview; its ref at that commit stays out; a new commit revives it.
	kept[0].Since = now.Add(-time.Hour)
	p = s.PlanFor(refs, "refs/heads/main", kept, nil, now)
	if len(p.Expired) != 1 || p.Expired[0].Name != "feature-x" || strings.Join(names(p.Previews), ",") != "pr-10,pr-2,pr-1" {
		t.Fatalf("expiry: %+v", p)
	}
	done := map[string]string{"refs/heads/feature-x": "fx", "refs/pull/10/head": "a10"}
	p = s.PlanFor(refs, "refs/heads/main", nil, done, now)
	if got := strings.Join(names(p.Previews), ","); got != "pr-2,pr-1" || p.Skipped != 0 {
		t.Fatalf("done refs: %s, skipped %d", got, p.Skipped)
	}
	refs["refs/heads/feature-x"] = "fx2"
	p = s.PlanFor(refs, "refs/heads/main", nil, done, now)
	if got := strings.Join(names(p.Previews), ","); got != "pr-2,pr-1,feature-x" {
		t.Fatalf("a new commit did not revive the expired preview: %s", got)
	}
	// A kept preview whose ref went is dropped.
	delete(refs, "refs/heads/feature-x")
	p = s.PlanFor(refs, "refs/heads/main", kept, nil, now)
	if got := strings.Join(names(p.Previews), ","); got != "pr-10,pr-2,pr-1" {
		t.Fatalf("a gone ref kept: %s", got)
	}
}
