package contentagent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The access files a value names are copied under names made of their content, the value rewritten to name the
// copies; a changed file gives a new name (so a new entry revision); a value naming none is kept byte for byte;
// a missing or oversized file fails the render; copies no longer named go at the next prune.
func TestAccessFilesAreCopiedUnderTheirDigest(t *testing.T) {
	valueDir, accessDir := t.TempDir(), t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(valueDir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plain := []byte(`{"version": 1, "headers": []}`)
	if out, names, err := withAccessFiles(plain, valueDir, accessDir); err != nil || string(out) != string(plain) || names != nil {
		t.Fatalf("a value without access files: %q %v %v", out, names, err)
	}

	write("htpasswd", "jane:$2y$10$abcdefghijklmnopqrstuuFakeHashFakeHashFakeHashFakeHash12\n")
	write("keys", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n")
	value := []byte(`{"version":1,"access":{"htpasswdFile":"htpasswd","sso":{"loginURL":"/l","keysFile":"keys"},"rules":[]}}`)
	out, names, err := withAccessFiles(value, valueDir, accessDir)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Version int
		Access  struct {
			HtpasswdFile string
			SSO          struct{ LoginURL, KeysFile string }
			Rules        []any
		}
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	if v.Version != 1 || v.Access.SSO.LoginURL != "/l" || v.Access.Rules == nil {
		t.Errorf("the rest of the value changed: %s", out)
	}
	if !slices.Equal(names, []string{v.Access.HtpasswdFile, v.Access.SSO.KeysFile}) ||
		!strings.HasPrefix(v.Access.HtpasswdFile, "htpasswd-") || !strings.HasPrefix(v.Access.SSO.KeysFile, "keys-") {
		t.Fatalf("names %v, value %s", names, out)
	}
	for _, n := range []string{"htpasswd", "keys"} {
		src, _ := os.ReadFile(filepath.Join(valueDir, n))
		copied, err := os.ReadFile(filepath.Join(accessDir, map[string]string{"htpasswd": v.Access.HtpasswdFile, "keys": v.Access.SSO.KeysFile}[n]))
		if err != nil || string(copied) != string(src) {
			t.Errorf("copy of %s: %q %v", n, copied, err)
		}
	}
	again, _, _ := withAccessFiles(value, valueDir, accessDir)
	if string(again) != string(out) {
		t.Errorf("the same files gave another value: %s, then %s", out, again)
	}

	// A rotated Secret: a new name for the htpasswd copy, the keys' unchanged.
	write("htpasswd", "joe:$2y$10$abcdefghijklmnopqrstuuFakeHashFakeHashFakeHashFakeHash12\n")
	rotated, names2, err := withAccessFiles(value, valueDir, accessDir)
	if err != nil || string(rotated) == string(out) || names2[0] == names[0] || names2[1] != names[1] {
		t.Fatalf("after a rotation: %s %v %v", rotated, names2, err)
	}
	pruneAccessFiles(accessDir, names2)
	left, _ := os.ReadDir(accessDir)
	var kept []string
	for _, e := range left {
		kept = append(kept, e.Name())
	}
	slices.Sort(kept)
	want := slices.Clone(names2)
	slices.Sort(want)
	if !slices.Equal(kept, want) {
		t.Errorf("after the prune: %v, want %v", kept, want)
	}

	if err := os.Remove(filepath.Join(valueDir, "keys")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := withAccessFiles(value, valueDir, accessDir); err == nil || !strings.Contains(err.Error(), `keysFile "keys"`) {
		t.Errorf("a missing keys file: %v", err)
	}
	write("keys", strings.Repeat("k", maxKeysBytes+1))
	if _, _, err := withAccessFiles(value, valueDir, accessDir); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("an oversized keys file: %v", err)
	}
}
