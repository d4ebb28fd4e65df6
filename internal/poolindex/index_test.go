package poolindex

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// The example of docs/design/pools.md is a valid shard, and it survives a render unchanged in meaning.
func TestExampleOfTheContractParses(t *testing.T) {
	data, err := os.ReadFile("testdata/example.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Sites) != 2 || s.Sites[0].ID != "team-a.docs" || len(s.Sites[1].Content.ConfigMaps) != 1 {
		t.Fatalf("parsed %+v", s)
	}
	out, err := Render(s.Shard, s.Sites)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(out)
	if err != nil {
		t.Fatalf("render of the example refused: %v\n%s", err, out)
	}
	a, _ := json.Marshal(s)
	b, _ := json.Marshal(again)
	if string(a) != string(b) {
		t.Fatalf("render changed the shard:\n%s\n%s", a, b)
	}
}

func TestRenderIsCanonical(t *testing.T) {
	x := site("b.y", "y.b.svc")
	y := site("a.x", "x.a.svc")
	one, _ := Render(1, []Site{x, y})
	two, _ := Render(1, []Site{y, x})
	if string(one) != string(two) {
		t.Fatalf("order leaked into the bytes:\n%s\n%s", one, two)
	}
	if !strings.HasPrefix(string(one), `{"version":1,"shard":1,"sites":[{"id":"a.x"`) {
		t.Fatalf("not sorted or not compact: %s", one)
	}
	empty, _ := Render(0, nil)
	if string(empty) != `{"version":1,"shard":0,"sites":[]}` {
		t.Fatalf("empty shard: %s", empty)
	}
}

func TestParseRefusesNamingThePath(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"unknown field":    {`{"version":1,"shard":0,"sites":[],"extra":1}`, `unknown field "extra"`},
		"version":          {`{"version":2,"shard":0,"sites":[]}`, "version: 2"},
		"bad id":           {shardWith(`"id":"Team.docs"`), "sites[0].id"},
		"id without name":  {shardWith(`"id":"team"`), "sites[0].id"},
		"host with port":   {shardWith(`"hosts":["docs.example.com:80"]`), "sites[0].hosts[0]"},
		"uppercase host":   {shardWith(`"hosts":["Docs.example.com"]`), "sites[0].hosts[0]"},
		"no limits":        {shardWith(`"limits":{"maxFiles":1,"maxBytes":1,"requestsPerSecond":0}`), "sites[0].limits"},
		"two contents":     {shardWith(`"content":{"git":{"url":"u","ref":"refs/heads/main","interval":"1m"},"configMaps":[{"name":"x"}]}`), "sites[0].content"},
		"no ref":           {shardWith(`"content":{"git":{"url":"u","ref":"","interval":"1m"}}`), "sites[0].content.git"},
		"value not object": {shardWith(`"value":[1]`), "sites[0].value"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseRefusesAHostOfTwoSites(t *testing.T) {
	doc, _ := Render(0, []Site{site("a.x", "same.example"), site("b.y", "same.example")})
	if _, err := Parse(doc); err == nil || !strings.Contains(err.Error(), "also a host of a.x") {
		t.Fatalf("err = %v", err)
	}
}

func TestShardOfIsStableAndSpreads(t *testing.T) {
	// Pinned: FNV-1a 32 of "team-a.docs" is 3014878111, 15 modulo 16; every reader of the index (the server, the
	// content agent) must choose the same shard.
	if got := ShardOf("team-a.docs", 16); got != 15 {
		t.Fatalf("ShardOf(team-a.docs, 16) = %d, want 15", got)
	}
	seen := map[int]int{}
	for i := range 1600 {
		seen[ShardOf(ID("ns", "site-"+string(rune('a'+i%26))+strings.Repeat("x", i/26)), 16)]++
	}
	for s := range 16 {
		if seen[s] < 50 {
			t.Fatalf("shard %d got %d of 1600 sites: %v", s, seen[s], seen)
		}
	}
}

func site(id, host string) Site {
	return Site{
		ID: id, Hosts: []string{host}, Value: json.RawMessage(`{"version":1}`),
		Limits:  Limits{MaxFiles: 10, MaxBytes: 10, RequestsPerSecond: 10},
		Content: Content{ConfigMaps: []ConfigMapContent{{Name: "m"}}},
	}
}

// shardWith is a valid one-site shard with one field replaced.
func shardWith(field string) string {
	base := map[string]string{
		"id": `"id":"a.x"`, "hosts": `"hosts":["x.a.svc"]`, "value": `"value":{"version":1}`,
		"limits":  `"limits":{"maxFiles":1,"maxBytes":1,"requestsPerSecond":1}`,
		"content": `"content":{"configMaps":[{"name":"m"}]}`,
	}
	key := field[1 : strings.Index(field[1:], `"`)+1]
	base[key] = field
	return `{"version":1,"shard":0,"sites":[{` + base["id"] + "," + base["hosts"] + "," + base["value"] + "," +
		base["limits"] + "," + base["content"] + `}]}`
}

func TestMirrorNameIsStableAndDistinct(t *testing.T) {
	a := MirrorName("shared", "team-a.docs", "pages")
	if a != MirrorName("shared", "team-a.docs", "pages") || !strings.HasPrefix(a, "shared.c-") || len(a) != len("shared.c-")+16 {
		t.Fatalf("MirrorName = %q", a)
	}
	if a == MirrorName("shared", "team-a.docs", "assets") || a == MirrorName("shared", "team-b.docs", "pages") {
		t.Fatal("two ConfigMaps share a mirror")
	}
}

// The server's contract test reads its own copy of the example: the two must stay the same bytes, so the Go and
// the Rust side of the index are held to one example.
func TestServerReadsTheSameExample(t *testing.T) {
	ours, err := os.ReadFile("testdata/example.json")
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := os.ReadFile("../../images/server/tests/data/pool-index-example.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(ours) != string(theirs) {
		t.Fatal("images/server/tests/data/pool-index-example.json differs from internal/poolindex/testdata/example.json")
	}
}

// An entry's revision is the hash of its bytes in the rendered shard (what the server hashes), and it changes when
// only the hosts change: a pod reporting the old one has not got the new hostname yet.
func TestEntryRevisionNamesTheEntrysBytesInItsShard(t *testing.T) {
	a, b := site("a.x", "x.a.svc"), site("b.y", "y.b.svc")
	b.Value = json.RawMessage(`{ "version": 1, "cleanURLs": true }`) // compacted by the render, as by the revision
	shard, err := Render(3, []Site{b, a})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []Site{a, b} {
		entry, _ := encode(s)
		if !strings.Contains(string(shard), string(entry)+",") && !strings.Contains(string(shard), string(entry)+"]") {
			t.Fatalf("entry %s is not in the shard as encoded alone:\n%s\n%s", s.ID, entry, shard)
		}
		sum := sha256.Sum256(entry)
		if got, _ := EntryRevision(s); got != "sha256:"+hex.EncodeToString(sum[:8]) {
			t.Fatalf("EntryRevision(%s) = %s", s.ID, got)
		}
	}
	before, _ := EntryRevision(a)
	a.Hosts = append(a.Hosts, "docs.example.com")
	if after, _ := EntryRevision(a); after == before {
		t.Fatal("a new host left the entry's revision unchanged")
	}
}
