// Command gitserver is the e2e tests' Git server: it serves the bare repositories under -repos over Git's smart
// HTTP protocol (fetch and push) with internal/gittestserver, optionally behind HTTP basic or bearer auth, so a
// private repository can live in kind with no `git` binary and nothing pulled. It runs FROM scratch.
//
// -init names repositories (comma-separated, e.g. site.git,private.git) to create empty at start when missing,
// so a test can push its first commit into them. Credentials come from the environment (GIT_USERNAME,
// GIT_PASSWORD, GIT_BEARER_TOKEN), never from flags: a pod's arguments are readable by anyone who can get pods.
//
//	gitserver [-listen :8080] [-repos /repos] [-init site.git,...]
package main

import (
	"errors"
	"flag"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"

	"hyperstatic.dev/hyperstatic/internal/gittestserver"
)

func main() {
	listen := flag.String("listen", ":8080", "address to serve smart HTTP on")
	repos := flag.String("repos", "/repos", "directory holding the bare repositories")
	initRepos := flag.String("init", "", "comma-separated repository names to create (bare, empty) when missing")
	flag.Parse()

	for _, name := range strings.Split(*initRepos, ",") {
		if name == "" {
			continue
		}
		dir := filepath.Join(*repos, filepath.Clean("/"+name))
		if _, err := git.PlainInit(dir, true); err != nil && !errors.Is(err, git.ErrRepositoryAlreadyExists) {
			log.Fatalf("creating %s: %v", dir, err)
		}
	}
	srv := gittestserver.New(*repos, os.Getenv("GIT_USERNAME"), os.Getenv("GIT_PASSWORD"), os.Getenv("GIT_BEARER_TOKEN"))
	log.Printf("serving the repositories under %s on %s (auth: %t)", *repos, *listen, srv.Username != "" || srv.BearerToken != "")
	hs := &http.Server{Addr: *listen, Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(hs.ListenAndServe())
}
