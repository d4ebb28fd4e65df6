package poolstate

import (
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/internal/autoplacement"
)

func drain(b *Board) []string {
	var out []string
	for {
		select {
		case e := <-b.Events():
			out = append(out, e.Object.GetNamespace()+"/"+e.Object.GetName())
		default:
			return out
		}
	}
}

func TestPublishAnnouncesOnlyChanges(t *testing.T) {
	b := New(16)
	b.Publish("p", map[string]Served{"ns.a": {ServedBy: 1, ReadyPods: 2}, "ns.b.c": {ServedBy: 2, ReadyPods: 2}})
	if got := drain(b); len(got) != 2 {
		t.Fatalf("first publish announced %v", got)
	}
	b.Publish("p", map[string]Served{"ns.a": {ServedBy: 1, ReadyPods: 2}, "ns.b.c": {ServedBy: 2, ReadyPods: 2}})
	if got := drain(b); len(got) != 0 {
		t.Fatalf("an unchanged publish announced %v", got)
	}
	b.Publish("p", map[string]Served{"ns.a": {ServedBy: 2, ReadyPods: 2}})
	got := drain(b)
	if len(got) != 2 {
		t.Fatalf("a change and a removal announced %v", got)
	}
	if _, ok := b.Get("ns.b.c"); ok {
		t.Fatal("a removed site is still on the board")
	}
	if s, _ := b.Get("ns.a"); s.ServedBy != 2 || s.Pool != "p" {
		t.Fatalf("Get = %+v", s)
	}
	// A site name with dots keeps them: the namespace is the first label.
	b.Publish("p", map[string]Served{"ns.b.c": {}})
	for _, e := range drain(b) {
		if e == "ns/b.c" {
			return
		}
	}
	t.Fatal("ns.b.c was not announced as ns/b.c")
}

func TestPoolsDoNotRemoveEachOthersSites(t *testing.T) {
	b := New(16)
	b.Publish("p", map[string]Served{"ns.a": {}})
	b.Publish("q", map[string]Served{"ns.z": {}})
	drain(b)
	b.Publish("q", map[string]Served{})
	if _, ok := b.Get("ns.a"); !ok {
		t.Fatal("pool q's publish removed pool p's site")
	}
}

// A site's rate moves on every pass: it is kept (Get has the latest) without waking the site; a new band, or a new
// start of the band, wakes it.
func TestTrafficAnnouncesOnlyBandChanges(t *testing.T) {
	b := New(16)
	since := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	traffic := func(band autoplacement.Band, since time.Time, rps float64) map[string]Served {
		return map[string]Served{"ns.a": {ServedBy: 1, ReadyPods: 1, Traffic: autoplacement.Traffic{Band: band, Since: since, RPS: rps}}}
	}
	b.Publish("p", traffic(autoplacement.BandBetween, since, 40))
	drain(b)
	b.Publish("p", traffic(autoplacement.BandBetween, since, 55))
	if got := drain(b); len(got) != 0 {
		t.Fatalf("a new rate in the same band announced %v", got)
	}
	if s, _ := b.Get("ns.a"); s.Traffic.RPS != 55 {
		t.Fatalf("Get has rate %v, want the latest, 55", s.Traffic.RPS)
	}
	b.Publish("p", traffic(autoplacement.BandAbove, since.Add(time.Minute), 500))
	if got := drain(b); len(got) != 1 || got[0] != "ns/a" {
		t.Fatalf("a band change announced %v, want ns/a", got)
	}
	b.Publish("p", traffic(autoplacement.BandAbove, since.Add(2*time.Minute), 500))
	if got := drain(b); len(got) != 1 {
		t.Fatalf("a new start of the band announced %v, want ns/a", got)
	}
}
