// Command gitserver is the e2e tests' Git server: it serves the bare repositories under -repos over Git's smart
// HTTP protocol (fetch and push) with internal/gittestserver, optionally behind HTTP basic or bearer auth, so a
// private repository can live in kind with no `git` binary and nothing pulled. It runs FROM scratch.
//
// -ssh-listen serves the same repositories over SSH too (git-upload-pack / git-receive-pack exec requests):
// GIT_SSH_HOST_KEY holds the host key (PEM) and GIT_SSH_AUTHORIZED_KEY the one client key accepted (an
// authorized_keys line).
//
// -tls-cert and -tls-key (PEM files, e.g. a kubernetes.io/tls Secret's tls.crt and tls.key mounted) serve HTTPS
// instead of HTTP on -listen: a private forge behind an internal CA, whose CA a site's Secret gives as ca.crt.
// The fetcher sends credentials over HTTPS only (plain HTTP just to loopback), so in kind this is how the test
// server serves a private repository.
//
// POST /-/pulls on -listen opens, updates and closes pull requests and delivers their webhook events (pulls.go);
// GIT_WEBHOOK_SECRET signs them.
//
// -init names repositories (comma-separated, e.g. site.git,private.git) to create empty at start when missing,
// so a test can push its first commit into them. Credentials come from the environment (GIT_USERNAME,
// GIT_PASSWORD, GIT_BEARER_TOKEN), never from flags: a pod's arguments are readable by anyone who can get pods.
//
//	gitserver [-listen :8080] [-tls-cert tls.crt -tls-key tls.key] [-ssh-listen :2222] [-repos /repos] [-init site.git,...]
package main

import (
	"errors"
	"flag"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"golang.org/x/crypto/ssh"

	"hyperstatic.dev/hyperstatic/internal/gittestserver"
)

func main() {
	listen := flag.String("listen", ":8080", "address to serve smart HTTP on")
	repos := flag.String("repos", "/repos", "directory holding the bare repositories")
	initRepos := flag.String("init", "", "comma-separated repository names to create (bare, empty) when missing")
	sshListen := flag.String("ssh-listen", "", "address to serve SSH on (needs GIT_SSH_HOST_KEY and GIT_SSH_AUTHORIZED_KEY)")
	tlsCert := flag.String("tls-cert", "", "certificate (PEM) to serve HTTPS with on -listen; needs -tls-key")
	tlsKey := flag.String("tls-key", "", "private key (PEM) of -tls-cert")
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
	if *sshListen != "" {
		go serveSSH(srv, *sshListen)
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	scheme := "http"
	if *tlsCert != "" {
		scheme = "https"
	}
	log.Printf("serving the repositories under %s over %s on %s (auth: %t)", *repos, scheme, *listen, srv.Username != "" || srv.BearerToken != "")
	log.Fatal(gittestserver.ServeHandler(l, pullsHandler(srv), *tlsCert, *tlsKey))
}

// serveSSH serves srv's repositories over SSH with the host key and the authorised client key from the
// environment; it ends the process on any error (a test server that half-starts only misleads).
func serveSSH(srv *gittestserver.Server, addr string) {
	host, err := ssh.ParsePrivateKey([]byte(os.Getenv("GIT_SSH_HOST_KEY")))
	if err != nil {
		log.Fatalf("GIT_SSH_HOST_KEY: %v", err)
	}
	authorized, _, _, _, err := ssh.ParseAuthorizedKey([]byte(os.Getenv("GIT_SSH_AUTHORIZED_KEY")))
	if err != nil {
		log.Fatalf("GIT_SSH_AUTHORIZED_KEY: %v", err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("serving SSH on %s (host key %s)", addr, ssh.FingerprintSHA256(host.PublicKey()))
	log.Fatal(srv.ServeSSH(l, gittestserver.SSHConfig(host, authorized)))
}
