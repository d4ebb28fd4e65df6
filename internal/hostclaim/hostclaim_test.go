package hostclaim

import (
	"reflect"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{"WWW.Example.COM.": "www.example.com", "*.A.example.com": "*.a.example.com", "x.y": "x.y"} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResolve(t *testing.T) {
	older, newer := t0, t0.Add(time.Minute)
	cases := []struct {
		name      string
		self      Claimant
		others    []Claimant
		held      []string
		conflicts []Conflict
	}{
		{name: "nobody else", self: Claimant{Site: "a/s", Created: newer, Claims: []string{"x.com", "y.com", "x.com"}},
			held: []string{"x.com", "y.com"}},
		{name: "held by another: the later claimant does not get it",
			self:   Claimant{Site: "b/s", Created: newer, Claims: []string{"x.com", "y.com"}},
			others: []Claimant{{Site: "a/s", Created: older, Claims: []string{"x.com"}, Holds: []string{"x.com"}}},
			held:   []string{"y.com"}, conflicts: []Conflict{{Hostname: "x.com", Holder: "a/s"}}},
		{name: "an older site adding a held hostname does not steal it",
			self:      Claimant{Site: "a/old", Created: older, Claims: []string{"x.com"}, Holds: []string{"q.com"}},
			others:    []Claimant{{Site: "b/new", Created: newer, Claims: []string{"x.com"}, Holds: []string{"x.com"}}},
			conflicts: []Conflict{{Hostname: "x.com", Holder: "b/new"}}},
		{name: "the holder keeps it against an older pending claim",
			self:   Claimant{Site: "b/new", Created: newer, Claims: []string{"x.com"}, Holds: []string{"x.com"}},
			others: []Claimant{{Site: "a/old", Created: older, Claims: []string{"x.com"}}},
			held:   []string{"x.com"}},
		{name: "two pending claims: the older wins",
			self:      Claimant{Site: "b/s", Created: newer, Claims: []string{"x.com"}},
			others:    []Claimant{{Site: "a/s", Created: older, Claims: []string{"x.com"}}},
			conflicts: []Conflict{{Hostname: "x.com", Holder: "a/s", Pending: true}}},
		{name: "two pending claims, seen from the older",
			self:   Claimant{Site: "a/s", Created: older, Claims: []string{"x.com"}},
			others: []Claimant{{Site: "b/s", Created: newer, Claims: []string{"x.com"}}},
			held:   []string{"x.com"}},
		{name: "same creation time: namespace/name orders",
			self:      Claimant{Site: "b/s", Created: older, Claims: []string{"x.com"}},
			others:    []Claimant{{Site: "a/s", Created: older, Claims: []string{"x.com"}}},
			conflicts: []Conflict{{Hostname: "x.com", Holder: "a/s", Pending: true}}},
		{name: "both hold it: the later gives it up",
			self:      Claimant{Site: "b/s", Created: newer, Claims: []string{"x.com"}, Holds: []string{"x.com"}},
			others:    []Claimant{{Site: "a/s", Created: older, Claims: []string{"x.com"}, Holds: []string{"x.com"}}},
			conflicts: []Conflict{{Hostname: "x.com", Holder: "a/s"}}},
		{name: "both hold it, seen from the earlier",
			self:   Claimant{Site: "a/s", Created: older, Claims: []string{"x.com"}, Holds: []string{"x.com"}},
			others: []Claimant{{Site: "b/s", Created: newer, Claims: []string{"x.com"}, Holds: []string{"x.com"}}},
			held:   []string{"x.com"}},
		{name: "a holder that dropped it from its spec still holds it until its pass records that",
			self:      Claimant{Site: "b/s", Created: newer, Claims: []string{"x.com"}},
			others:    []Claimant{{Site: "a/s", Created: older, Holds: []string{"x.com"}}},
			conflicts: []Conflict{{Hostname: "x.com", Holder: "a/s"}}},
		{name: "a holder wins over an earlier pending claim",
			self: Claimant{Site: "c/s", Created: newer.Add(time.Minute), Claims: []string{"x.com"}},
			others: []Claimant{{Site: "a/s", Created: older, Claims: []string{"x.com"}},
				{Site: "b/s", Created: newer, Claims: []string{"x.com"}, Holds: []string{"x.com"}}},
			conflicts: []Conflict{{Hostname: "x.com", Holder: "b/s"}}},
		{name: "a wildcard and a name under it do not conflict",
			self:   Claimant{Site: "b/s", Created: newer, Claims: []string{"www.example.com"}},
			others: []Claimant{{Site: "a/s", Created: older, Claims: []string{"*.example.com"}, Holds: []string{"*.example.com"}}},
			held:   []string{"www.example.com"}},
		{name: "itself among the others is ignored",
			self:   Claimant{Site: "a/s", Created: newer, Claims: []string{"x.com"}},
			others: []Claimant{{Site: "a/s", Created: newer, Claims: []string{"x.com"}, Holds: []string{"x.com"}}},
			held:   []string{"x.com"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			held, conflicts := Resolve(tc.self, tc.others)
			if !reflect.DeepEqual(held, tc.held) || !reflect.DeepEqual(conflicts, tc.conflicts) {
				t.Errorf("Resolve = %q, %+v; want %q, %+v", held, conflicts, tc.held, tc.conflicts)
			}
		})
	}
}

// Two claimants, neither holding: each one's answer, computed from the same objects, is the other's complement,
// whatever order they are given in (so two reconcilers never both take the hostname).
func TestResolveAgreesBothWays(t *testing.T) {
	a := Claimant{Site: "ns1/a", Created: t0, Claims: []string{"x.com"}}
	b := Claimant{Site: "ns2/b", Created: t0, Claims: []string{"x.com"}}
	for _, created := range []time.Time{t0.Add(-time.Second), t0, t0.Add(time.Second)} {
		b.Created = created
		ha, _ := Resolve(a, []Claimant{b})
		hb, _ := Resolve(b, []Claimant{a})
		if len(ha)+len(hb) != 1 {
			t.Errorf("b created %v: a gets %q, b gets %q: exactly one must", created, ha, hb)
		}
	}
}
