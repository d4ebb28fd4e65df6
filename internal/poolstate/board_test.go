package poolstate

import (
	"testing"
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
