package gitsource

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteFiles holds a tree that is not a commit (a pool's ConfigMap site) to a fetched tree's rules.
func TestWriteFiles(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{"index.html": []byte("hi"), "a/b/c.html": []byte("deep"), "a/x.bin": {0, 0xff}}
	if err := WriteFiles(dir, files, Limits{}); err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: %q %v", name, got, err)
		}
	}
	for name, tc := range map[string]struct {
		files map[string][]byte
		lim   Limits
		want  Reason
		msg   string
	}{
		// 3 files and 2 directories are 5 entries.
		"entries":        {files, Limits{MaxEntries: 4}, TooLarge, "limit of 4 entries"},
		"bytes":          {files, Limits{MaxBytes: 3 * EntryCost}, TooLarge, "size limit"},
		"depth":          {files, Limits{MaxDepth: 2}, TooLarge, "depth limit of 2"},
		"climbing name":  {map[string][]byte{"../x": nil}, Limits{}, InvalidContent, `"../x"`},
		"absolute name":  {map[string][]byte{"/etc/x": nil}, Limits{}, InvalidContent, `"/etc/x"`},
		"file and dir":   {map[string][]byte{"a": nil, "a/b": nil}, Limits{}, InvalidContent, "both a file and the directory"},
		"dot in the way": {map[string][]byte{"a/./b": nil}, Limits{}, InvalidContent, `"a/./b"`},
	} {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			err := WriteFiles(out, tc.files, tc.lim)
			if ReasonOf(err) != tc.want || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %s containing %q", err, tc.want, tc.msg)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(out), "x")); !os.IsNotExist(err) {
				t.Errorf("a file was written outside the directory (%v)", err)
			}
		})
	}
}

func TestTreeName(t *testing.T) {
	for name, want := range map[string]bool{
		"0123456789abcdef": true, strings.Repeat("a", 40): true, strings.Repeat("f", 64): true,
		"0123456789abcde": false, strings.Repeat("a", 65): false, "0123456789ABCDEF": false,
		"current": false, ".stage-0123456789abcdef": false, "../0123456789abcdef": false,
	} {
		if TreeName(name) != want {
			t.Errorf("TreeName(%q) = %v", name, !want)
		}
	}
}
