package main

import (
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
)

// isLoopbackIP says whether ip (no port) is in 127.0.0.0/8 or ::1 (IPv4-mapped forms included).
func isLoopbackIP(ip string) bool {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	return a.Unmap().IsLoopback()
}

// nonLoopbackPeers reads `ss -tnpH` output and returns the peer addresses of pid's TCP sockets that are not on
// loopback. A listening socket's peer is a wildcard ("0.0.0.0:*", "[::]:*", "*:*"): not a connection, skipped.
func nonLoopbackPeers(ssOutput string, pid int) []string {
	owner := fmt.Sprintf("pid=%d,", pid)
	var bad []string
	for _, line := range strings.Split(ssOutput, "\n") {
		if !strings.Contains(line, owner) {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		peer := f[4]
		host, port, err := net.SplitHostPort(peer)
		if err != nil || port == "*" {
			continue
		}
		if i := strings.IndexByte(host, '%'); i >= 0 { // a zone (fe80::1%eth0)
			host = host[:i]
		}
		if !isLoopbackIP(host) {
			bad = append(bad, peer)
		}
	}
	return bad
}

// checkLoopbackOnly runs ss and fails if pid has a TCP connection to a non-loopback address; it also returns how
// many of pid's sockets it saw, so a report can show the check looked at something.
func checkLoopbackOnly(pid int) (int, error) {
	out, err := exec.Command("ss", "-tanpH").Output()
	if err != nil {
		return 0, fmt.Errorf("ss -tanpH: %w", err)
	}
	seen := strings.Count(string(out), fmt.Sprintf("pid=%d,", pid))
	if bad := nonLoopbackPeers(string(out), pid); len(bad) > 0 {
		return seen, fmt.Errorf("process %d has TCP sockets to non-loopback peers: %s", pid, strings.Join(bad, " "))
	}
	return seen, nil
}
