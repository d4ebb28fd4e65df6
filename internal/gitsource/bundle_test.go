package gitsource

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
)

// A fetched tree goes into a bundle and out into another Store whole, links included; the same tree always
// gives the same digest.
func TestBundleRoundTrip(t *testing.T) {
	r := newRepo(t)
	files := with(site("v1"), map[string]gts.File{"latest": gts.Symlink("docs"), "empty.txt": gts.Regular("")})
	c := r.Commit("v1", files)
	r.Push("refs/heads/main", c, false)
	fetcher := newStore(t)
	mustSync(t, fetcher, Source{URL: r.URL, Ref: "main"})

	var first, second bytes.Buffer
	d1, err := WriteBundle(&first, fetcher.Served())
	if err != nil {
		t.Fatal(err)
	}
	d2, err := WriteBundle(&second, filepath.Join(fetcher.Dir, c.String()))
	if err != nil {
		t.Fatal(err)
	}
	if d1 != d2 || !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Fatalf("one tree, two bundles: %s and %s", d1, d2)
	}
	if sum := sha256.Sum256(first.Bytes()); hex.EncodeToString(sum[:]) != d1 {
		t.Fatalf("the digest %s is not the SHA-256 of the bytes written", d1)
	}

	pod := newStore(t)
	err = pod.Install(c.String(), func(dir string) error {
		return ExtractBundle(bytes.NewReader(first.Bytes()), dir, d1, Limits{MaxBytes: 1 << 20})
	})
	if err != nil {
		t.Fatal(err)
	}
	if cur, _ := pod.Current(); cur != c.String() {
		t.Fatalf("the pod serves %q, want %s", cur, c)
	}
	if got, want := served(t, pod), served(t, fetcher); len(got) != len(want) {
		t.Fatalf("the pod's tree %v differs from the fetcher's %v", got, want)
	} else {
		for p, data := range want {
			if got[p] != data {
				t.Fatalf("%s: %q on the pod, %q on the fetcher", p, got[p], data)
			}
		}
	}
	if target, err := os.Readlink(filepath.Join(pod.Served(), "latest")); err != nil || target != "docs" {
		t.Fatalf("latest: %q (%v), want a link to docs", target, err)
	}
}

// tarOf builds a tar by hand: what a hostile or broken fetcher could send.
func tarOf(t *testing.T, entries ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(bytes.Repeat([]byte("x"), int(h.Size))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// A bundle that breaks the tree rules, is over the limit, or does not match its digest installs nothing.
func TestExtractBundleRefuses(t *testing.T) {
	file := func(name string, size int64) *tar.Header {
		return &tar.Header{Name: name, Typeflag: tar.TypeReg, Size: size, Mode: 0o644}
	}
	link := func(name, target string) *tar.Header {
		return &tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777}
	}
	good := tarOf(t, file("index.html", 5))
	for name, tc := range map[string]struct {
		bundle []byte
		digest string
		want   Reason
	}{
		"climbing name":   {tarOf(t, file("../evil", 1)), "", InvalidContent},
		"absolute name":   {tarOf(t, file("/etc/evil", 1)), "", InvalidContent},
		"escaping link":   {tarOf(t, link("up", "../../etc")), "", InvalidContent},
		"absolute link":   {tarOf(t, link("up", "/etc")), "", InvalidContent},
		"hard link":       {tarOf(t, &tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "index.html"}), "", InvalidContent},
		"device":          {tarOf(t, &tar.Header{Name: "d", Typeflag: tar.TypeChar}), "", InvalidContent},
		"over the limit":  {tarOf(t, file("a", 600), file("b", 600)), "", TooLarge},
		"wrong digest":    {good, digest([]byte("other")), InvalidContent},
		"cut short":       {good[:len(good)-1024], digest(good), InvalidContent},
		"link to nothing": {tarOf(t, link("l", "missing")), "", InvalidContent},
	} {
		t.Run(name, func(t *testing.T) {
			s := newStore(t)
			want := tc.digest
			if want == "" {
				want = digest(tc.bundle)
			}
			err := s.Install(strings.Repeat("ab", 20), func(dir string) error {
				return ExtractBundle(bytes.NewReader(tc.bundle), dir, want, Limits{MaxBytes: 1000})
			})
			if ReasonOf(err) != tc.want {
				t.Fatalf("got %v, want reason %s", err, tc.want)
			}
			if cur, _ := s.Current(); cur != "" {
				t.Fatalf("a refused bundle was published as %s", cur)
			}
		})
	}
}
