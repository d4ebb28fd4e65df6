package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The pool's content-agent contract: the command lines docs/design/pools.md ("The command lines") gives the
// operator for a pool's fetcher and its pods' puller are accepted by the real binary, every --flag that section
// names is one the subcommand defines, and the processes started from those lines answer GET /sites in the
// contract's form. The operator's half (controllers/pool) writes those lines; until its own test runs them, the
// page is the source both halves are held to, so this test reads the page itself.

// poolCommandLines are the `content-agent pool-…` command lines of the section, as argument lists (without
// "content-agent"), and every `--flag` the section names.
func poolCommandLines(t *testing.T) (lines [][]string, flags []string) {
	t.Helper()
	page, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "design", "pools.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(page), "## The command lines")
	if !ok {
		t.Fatal(`docs/design/pools.md has no "## The command lines" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, m := range regexp.MustCompile("`content-agent (pool-[a-z]+[^`]*)`").FindAllStringSubmatch(section, -1) {
		lines = append(lines, strings.Fields(m[1]))
	}
	for _, m := range regexp.MustCompile("`(--[a-z-]+)`").FindAllStringSubmatch(section, -1) {
		flags = append(flags, m[1])
	}
	if len(lines) != 2 {
		t.Fatalf("want the fetcher's and the puller's command lines in the section, found %q", lines)
	}
	return lines, flags
}

func TestContractPoolCommandLinesParse(t *testing.T) {
	bin := serverbin.ContentAgent(t)
	lines, named := poolCommandLines(t)
	defined := map[string]map[string]bool{}
	for _, args := range lines {
		code, out := parseOnly(t, bin, args)
		if code != 0 || !strings.Contains(out, "Usage of "+args[0]) {
			t.Fatalf("content-agent refuses the page's command line (exit %d)\nargs: %s\noutput: %s", code, serverbin.QuoteArgs(args), out)
		}
		defined[args[0]] = map[string]bool{}
		for _, m := range usageFlag.FindAllStringSubmatch(out, -1) {
			defined[args[0]][m[1]] = true
		}
		for _, f := range flagNames(args) {
			if !defined[args[0]][f] {
				t.Errorf("--%s of the page's %s line is not in its usage", f, args[0])
			}
		}
	}
	for _, f := range named {
		if !defined["pool-fetch"][f[2:]] && !defined["pool-pull"][f[2:]] {
			t.Errorf("the section names %s, which neither pool-fetch nor pool-pull defines", f)
		}
	}
	// The check can fail: an unknown flag, and a puller flag given to the fetcher, are refused.
	for _, args := range [][]string{append(slices.Clone(lines[0]), "--no-such-flag"), append(slices.Clone(lines[0]), "--fetcher", "http://x")} {
		if code, out := parseOnly(t, bin, args); code == 0 {
			t.Errorf("accepted: %s\n%s", serverbin.QuoteArgs(args), out)
		}
	}
}

// The real pool-fetch and pool-pull, started from the page's lines (directories and ports moved to the test's;
// --namespace dropped: there is no API server here, and only ConfigMap sites need it), bring a Git site's tree to
// the pod's content directory and answer /sites with exactly the contract's fields.
func TestContractPoolAgentsServeTheContract(t *testing.T) {
	lines, _ := poolCommandLines(t)
	srv, base := gts.Start(t, "", "", "")
	repo := srv.NewRepo(t, base, "docs.git", nil)
	repo.Push("refs/heads/main", repo.Commit("v1", map[string]gts.File{"site/index.html": gts.Regular("hello\n")}), false)
	dir := t.TempDir()
	index := filepath.Join(dir, "index")
	if err := os.Mkdir(index, 0o755); err != nil {
		t.Fatal(err)
	}
	site := poolindex.Site{ID: "team-a.docs", Hosts: []string{"docs.example.com"}, Value: json.RawMessage(`{"version":1}`),
		Limits:  poolindex.Limits{MaxFiles: 100, MaxBytes: 1 << 20, RequestsPerSecond: 10},
		Content: poolindex.Content{Git: &poolindex.GitContent{URL: repo.URL, Ref: "main", Path: "site", Interval: "1m"}}}
	shard, err := poolindex.Render(0, []poolindex.Site{site})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(index, "index-00.json"), shard, 0o644); err != nil {
		t.Fatal(err)
	}

	fetchAddr, pullAddr := freePort(t), freePort(t)
	fetch := withoutFlag(lines[0], "--namespace")
	fetch = setArg(t, fetch, "--index", index)
	fetch = setArg(t, fetch, "--dir", filepath.Join(dir, "fetcher"))
	fetch = setArg(t, fetch, "--listen", fetchAddr)
	fetch = setArg(t, fetch, "--check-server", serverbin.Require(t))
	runAgent(t, fetch, fetchAddr)
	pull := setArg(t, lines[1], "--index", index)
	pull = setArg(t, pull, "--dir", filepath.Join(dir, "content"))
	pull = setArg(t, pull, "--fetcher", "http://"+fetchAddr)
	pull = setArg(t, pull, "--listen", pullAddr)
	runAgent(t, pull, pullAddr)

	for _, addr := range []string{fetchAddr, pullAddr} {
		testenv.Eventually(t, "the site's bundle at "+addr, func() error {
			sites, err := strictSites("http://" + addr + "/sites")
			if err != nil {
				return err
			}
			if len(sites.Sites) != 1 || sites.Sites[0].ID != site.ID || sites.Sites[0].Bundle == "" || sites.Sites[0].Error != "" {
				return fmt.Errorf("sites %+v", sites)
			}
			return nil
		})
		if code := statusOf(t, "http://"+addr+"/healthz"); code != http.StatusOK {
			t.Errorf("%s /healthz %d, want 200", addr, code)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "content", site.ID, "current", "index.html"))
	if err != nil || string(data) != "hello\n" {
		t.Errorf("content/%s/current/index.html: %q %v", site.ID, data, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "content", contentagent.ReadyDir, site.ID)); err != nil {
		t.Errorf("no ready signal: %v", err)
	}
}

// strictSites reads a /sites answer refusing any field the contract does not name.
func strictSites(url string) (contentagent.PoolSites, error) {
	var out contentagent.PoolSites
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return out, err
	}
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	return out, dec.Decode(&out)
}

// withoutFlag drops flag and its value from a copy of args.
func withoutFlag(args []string, flag string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == flag {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}
