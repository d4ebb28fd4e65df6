// Command smoke is the one static binary behind the tiny FROM scratch image the cluster tooling uses to
// check a Docker engine and a kind cluster:
//
//	smoke caps           print this process's capability sets (docker --privileged check)
//	smoke serve          HTTP server on :8080 answering "hello from <hostname>"
//	smoke get URL [N]    GET URL, retrying up to N times (default 30); exit 0 on HTTP 200
//	smoke cpus           print Cpus_allowed_list (CPU manager check), then sleep forever
package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "caps":
		printStatusLines("Cap")
	case "serve":
		serve()
	case "get":
		if len(os.Args) < 3 {
			usage()
		}
		attempts := 30
		if len(os.Args) > 3 {
			n, err := strconv.Atoi(os.Args[3])
			if err != nil || n < 1 {
				usage()
			}
			attempts = n
		}
		os.Exit(get(os.Args[2], attempts))
	case "cpus":
		printStatusLines("Cpus_allowed_list")
		for {
			time.Sleep(time.Hour) // stay up so the test can read the logs and the kubelet's state
		}
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: smoke caps | serve | get URL [N] | cpus")
	os.Exit(2)
}

// printStatusLines prints the lines of /proc/self/status that start with prefix.
func printStatusLines(prefix string) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), prefix) {
			fmt.Println(s.Text())
		}
	}
}

func serve() {
	host, _ := os.Hostname()
	http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintf(w, "hello from %s\n", host) })
	fmt.Println("listening on :8080")
	if err := http.ListenAndServe(":8080", nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// get fetches url until it answers 200 (cluster DNS needs a few retries right after creation).
func get(url string, attempts int) int {
	c := &http.Client{Timeout: 3 * time.Second}
	for i := 1; i <= attempts; i++ {
		resp, err := c.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				fmt.Printf("OK %s -> %s", url, body)
				return 0
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		fmt.Fprintf(os.Stderr, "attempt %d/%d: %v\n", i, attempts, err)
		time.Sleep(time.Second)
	}
	return 1
}
