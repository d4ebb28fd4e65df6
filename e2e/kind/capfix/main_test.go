package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestSpecFiles(t *testing.T) {
	cases := []struct {
		args []string
		want []specFile
	}{
		{[]string{"--root", "/run/x", "--log", "/l", "create", "--bundle", "/b", "id"}, []specFile{{"/b/config.json", true}}},
		{[]string{"run", "--bundle=/b2", "id"}, []specFile{{"/b2/config.json", true}}},
		{[]string{"--root", "/r", "exec", "--process", "/tmp/p.json", "id"}, []specFile{{"/tmp/p.json", false}}},
		{[]string{"exec", "-p", "/p"}, []specFile{{"/p", false}}},
		{[]string{"--root", "create", "state", "id"}, nil}, // "create" is the --root value here, the command is state
		{[]string{"delete", "id"}, nil},
	}
	for _, c := range cases {
		if got := specFiles(c.args); !reflect.DeepEqual(got, c.want) {
			t.Errorf("specFiles(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

func TestRewriteSpecDropsOnlyMissingCapabilities(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.json")
	spec := `{"ociVersion":"1.0.2","process":{"capabilities":{"bounding":["CAP_CHOWN","CAP_SYS_RESOURCE","CAP_BPF","CAP_FUTURE"],"effective":["CAP_SYS_RESOURCE"]}}}`
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	// bounding set: everything but CAP_SYS_RESOURCE (bit 24), like this VM.
	bounding := uint64(0x1fffeffffff)
	if err := rewriteSpec(file, true, bounding); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Process struct {
			Capabilities map[string][]string `json:"capabilities"`
		} `json:"process"`
		OCIVersion string `json:"ociVersion"`
	}
	b, _ := os.ReadFile(file)
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if got, want := doc.Process.Capabilities["bounding"], []string{"CAP_CHOWN", "CAP_BPF", "CAP_FUTURE"}; !reflect.DeepEqual(got, want) {
		t.Errorf("bounding = %v, want %v (unknown names are kept for runc to judge)", got, want)
	}
	if got := doc.Process.Capabilities["effective"]; len(got) != 0 {
		t.Errorf("effective = %v, want empty", got)
	}
	if doc.OCIVersion != "1.0.2" {
		t.Errorf("other fields must survive, got ociVersion %q", doc.OCIVersion)
	}
}

func TestReadBoundingSet(t *testing.T) {
	f := filepath.Join(t.TempDir(), "status")
	_ = os.WriteFile(f, []byte("Name:\tx\nCapBnd:\t000001fffeffffff\n"), 0o644)
	v, err := readBoundingSet(f)
	if err != nil || v != 0x1fffeffffff {
		t.Fatalf("got %x, %v", v, err)
	}
}
