// Command capsites writes the three synthetic sites of the e2e capacity scenario (e2e/capacity_test.go) under
// -out: v1, v2 (harmless: the same pages, only the index's version marker differs) and v3 (heavy: every HTML page
// replaced by one 20 times larger). The page text is pseudo-random letters from a fixed seed, so the trees are the
// same on every run (Docker's build cache keeps their images) and brotli cannot shrink the heavy pages back to the
// light ones: their weight reaches the wire whatever the client accepts.
package main

import (
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

const (
	pages     = 30
	pageBytes = 16 << 10 // a light page's text: about a documentation page (the Python docs average 63 KB)
	heavyX    = 20       // the heavy version's factor
)

func main() {
	out := flag.String("out", "", "directory to write v1/, v2/ and v3/ into (replaced)")
	flag.Parse()
	if *out == "" {
		log.Fatal("capsites: -out is required")
	}
	for _, v := range []struct {
		name   string
		marker string
		factor int
	}{{"v1", "capacity-version-1", 1}, {"v2", "capacity-version-2", 1}, {"v3", "capacity-version-3", heavyX}} {
		dir := filepath.Join(*out, v.name)
		if err := os.RemoveAll(dir); err != nil {
			log.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			log.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(29, 29)) // the same text for every version: only size and marker differ
		var links strings.Builder
		for i := range pages {
			name := fmt.Sprintf("page-%02d.html", i)
			fmt.Fprintf(&links, "<li><a href=\"/%s\">page %d</a></li>\n", name, i)
			write(dir, name, page(fmt.Sprintf("Page %d", i), text(rng, pageBytes*v.factor)))
		}
		write(dir, "index.html", page("Capacity test site", "<p>"+v.marker+"</p>\n<ul>\n"+links.String()+"</ul>\n<p>"+text(rng, pageBytes*v.factor)+"</p>"))
	}
}

func page(title, body string) string {
	return "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + title + "</title></head>\n<body>\n" + body + "\n</body></html>\n"
}

// text is n bytes of lowercase words: readable as HTML, but random enough that compression saves little.
func text(rng *rand.Rand, n int) string {
	var b strings.Builder
	b.Grow(n)
	for b.Len() < n {
		w := 2 + rng.IntN(9)
		for range w {
			b.WriteByte(byte('a' + rng.IntN(26)))
		}
		b.WriteByte(' ')
	}
	return b.String()[:n]
}

func write(dir, name, s string) {
	if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
		log.Fatal(err)
	}
}
