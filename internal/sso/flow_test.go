package sso

import (
	"strings"
	"testing"
	"time"
)

func TestFlowCookiesOpenOnlyUnalteredAndInTime(t *testing.T) {
	keys, err := ParseKeys("Y3VycmVudC1rZXktMDEyMzQ1Njc4OWFiY2RlZjAxMjM=\n")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_000_000, 0)
	f := flow{State: random(), Nonce: random(), Verifier: "v", RD: "/a b|c?x=1", Expires: now.Add(flowTTL)}
	v := keys.sealFlow(f)
	got, ok := keys.openFlow(v, now)
	if !ok || got != f {
		t.Fatalf("opened %v %+v, want %+v", ok, got, f)
	}
	if _, ok := keys.openFlow(v, now.Add(flowTTL)); ok {
		t.Error("an expired flow opened")
	}
	if _, ok := keys.openFlow(strings.Replace(v, f.Nonce, random(), 1), now); ok {
		t.Error("a flow with another nonce opened")
	}
	if _, ok := keys.Verify(v, now); ok {
		t.Error("a flow cookie verified as a session")
	}
}

func TestRDStaysOnTheSite(t *testing.T) {
	for rd, want := range map[string]string{
		"/docs/a?x=1": "/docs/a?x=1", "": "/", "//evil.example/x": "/", "/\\evil.example": "/",
		"https://evil.example/": "/", "docs": "/", "/a\r\nSet-Cookie: x": "/",
	} {
		if got := safeRD(rd); got != want {
			t.Errorf("safeRD(%q) = %q, want %q", rd, got, want)
		}
	}
}

func TestKeysFilesAndSessions(t *testing.T) {
	for _, bad := range []string{"", "c2hvcnQ=", "!!!", "Y3VycmVudC1rZXktMDEyMzQ1Njc4OWFiY2RlZjAxMjM=\n" +
		"Y3VycmVudC1rZXktMDEyMzQ1Njc4OWFiY2RlZjAxMjM=\nY3VycmVudC1rZXktMDEyMzQ1Njc4OWFiY2RlZjAxMjM="} {
		if _, err := ParseKeys(bad); err == nil {
			t.Errorf("ParseKeys(%q) accepted", bad)
		} else if strings.Contains(err.Error(), "Y3Vy") {
			t.Errorf("an error shows a key: %v", err)
		}
	}
	keys, _ := ParseKeys("Y3VycmVudC1rZXktMDEyMzQ1Njc4OWFiY2RlZjAxMjM=")
	now := time.Unix(1_000_000, 0)
	v := keys.Mint(Session{Email: "Jane@Example.com", Groups: []string{"a b", "c:d"}, Expires: now.Add(time.Hour)})
	if want := "1|1003600|jane@example.com|a%20b:c%3Ad|"; !strings.HasPrefix(v, want) {
		t.Errorf("minted %q, want it to start %q", v, want)
	}
	s, ok := keys.Verify(v, now)
	if !ok || s.Email != "jane@example.com" || len(s.Groups) != 2 {
		t.Errorf("verified %v %+v", ok, s)
	}
}
