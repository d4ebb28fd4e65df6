package main

// The -tree mode: a whole site tree checked byte for byte under many bases from one pod, with a result line per
// base instead of per file. Twenty previews of the Python docs on two pods are 42,600 files: as URLs on the command
// line they would pass what a pod's spec may hold, and as a JSON line each they would make the log the test reads
// 5 MB. So the expected tree travels once (-tree: "SHA256 SIZE PATH" per line, production's files) and each base
// names only how it differs (a preview's changed page).
//
//	fetch -tree "$(lines)" 'http://pr-2--docs.example/ @10.0.0.7:8080 /index.html=SHA256:SIZE' ...
//
// Each argument is whitespace-separated tokens: the base URL first; "@HOST:PORT" dials there for every file of
// this base (the base's host is still the Host header: a preview hostname without DNS); "PATH=SHA256:SIZE" replaces
// or adds that file's expectation for this base.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// TreeResult is one base's verdict: every file fetched once, the mismatches named (the first maxMismatches).
type TreeResult struct {
	Base       string   `json:"base"`
	Files      int      `json:"files"`
	Bytes      int64    `json:"bytes"`
	Mismatched int      `json:"mismatched"`
	Mismatches []string `json:"mismatches,omitempty"`
	Error      string   `json:"error,omitempty"`
}

// maxMismatches bounds the names a result carries: enough to see what went wrong, not a log of a broken tree.
const maxMismatches = 20

// treeWorkers fetch a base's files side by side: one connection each, enough to keep a pod of a quarter of a CPU
// busy without piling requests on it.
const treeWorkers = 4

// wantFile is one file's expected bytes.
type wantFile struct {
	sha256 string
	size   int
}

// parseTree reads -tree's lines ("SHA256 SIZE PATH"; PATH may hold spaces).
func parseTree(s string) (map[string]wantFile, error) {
	tree := map[string]wantFile{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, " ", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("-tree line %q: want SHA256 SIZE PATH", line)
		}
		size, err := strconv.Atoi(parts[1])
		if err != nil || len(parts[0]) != 64 {
			return nil, fmt.Errorf("-tree line %q: want SHA256 SIZE PATH", line)
		}
		tree[parts[2]] = wantFile{parts[0], size}
	}
	return tree, sc.Err()
}

// treeBase is one argument of -tree mode: where to fetch and what differs there.
type treeBase struct {
	base    string
	connect string
	over    map[string]wantFile
}

func parseTreeBase(arg string) (treeBase, error) {
	tokens := strings.Fields(arg)
	if len(tokens) == 0 {
		return treeBase{}, fmt.Errorf("an empty base")
	}
	b := treeBase{base: strings.TrimSuffix(tokens[0], "/"), over: map[string]wantFile{}}
	for _, tok := range tokens[1:] {
		if addr, ok := strings.CutPrefix(tok, "@"); ok {
			b.connect = addr
			continue
		}
		path, want, ok := strings.Cut(tok, "=")
		sum, size, ok2 := strings.Cut(want, ":")
		n, err := strconv.Atoi(size)
		if !ok || !ok2 || err != nil || len(sum) != 64 {
			return treeBase{}, fmt.Errorf("base %s: token %q: want @HOST:PORT or PATH=SHA256:SIZE", b.base, tok)
		}
		b.over[path] = wantFile{sum, n}
	}
	return b, nil
}

// checkTree fetches every file of tree (with b's overrides) under b's base and says which differ.
func checkTree(tree map[string]wantFile, b treeBase) TreeResult {
	want := make(map[string]wantFile, len(tree)+len(b.over))
	for p, w := range tree {
		want[p] = w
	}
	for p, w := range b.over {
		want[p] = w
	}
	transport := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: treeWorkers}
	if b.connect != "" {
		dialer := &net.Dialer{Timeout: 10 * time.Second}
		transport.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, b.connect)
		}
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{Timeout: 30 * time.Second, Transport: transport,
		// A redirect is an answer to check, not one to follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	paths := make(chan string)
	var mu sync.Mutex
	r := TreeResult{Base: b.base}
	var wg sync.WaitGroup
	for range treeWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range paths {
				size, sum, err := fetchSum(client, b.base+escapePath(p))
				mu.Lock()
				r.Files++
				r.Bytes += int64(size)
				if w := want[p]; err != nil || size != w.size || sum != w.sha256 {
					r.Mismatched++
					if len(r.Mismatches) < maxMismatches {
						r.Mismatches = append(r.Mismatches, fmt.Sprintf("%s: %d bytes, sha256 %.12s, %v (want %d bytes, %.12s)", p, size, sum, err, w.size, w.sha256))
					}
				}
				mu.Unlock()
			}
		}()
	}
	for p := range want {
		paths <- p
	}
	close(paths)
	wg.Wait()
	return r
}

// fetchSum GETs u and returns the body's size and SHA-256; a status other than 200 is an error.
func fetchSum(c *http.Client, u string) (int, string, error) {
	resp, err := c.Get(u)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d", resp.StatusCode)
	}
	return int(n), hex.EncodeToString(h.Sum(nil)), err
}

// escapePath escapes each segment of a site path ("/a b/c.html" → "/a%20b/c.html").
func escapePath(p string) string {
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "/" + strings.Join(segs, "/")
}

// runTree checks the tree under every base argument, one result line each, and returns the exit code: 1 when any
// base is unreadable or differs.
func runTree(out *json.Encoder, lines string, args []string) int {
	tree, err := parseTree(lines)
	if err != nil || len(tree) == 0 || len(args) == 0 {
		fail(fmt.Sprintf("-tree needs lines and at least one base (%v)", err))
	}
	code := 0
	for _, arg := range args {
		b, err := parseTreeBase(arg)
		if err != nil {
			_ = out.Encode(TreeResult{Base: arg, Error: err.Error()})
			code = 1
			continue
		}
		r := checkTree(tree, b)
		if r.Mismatched > 0 {
			code = 1
		}
		_ = out.Encode(r)
	}
	return code
}
