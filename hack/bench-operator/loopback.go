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

// peersOnPort reads `ss -tanH` output and returns the peer addresses of every TCP socket (any process, any
// state: a scrape's closed connection lingers in TIME-WAIT without an owner) whose peer port is port.
func peersOnPort(ssOutput string, port string) []string {
	var peers []string
	for _, line := range strings.Split(ssOutput, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		if _, p, err := net.SplitHostPort(f[4]); err == nil && p == port {
			peers = append(peers, f[4])
		}
	}
	return peers
}

// socketCheck is what one look at the machine's TCP sockets found.
type socketCheck struct {
	operatorSockets int // the operator's own sockets (listening and connected)
	scrapeSockets   int // sockets, any owner and state, to the admin port
}

// checkLoopbackOnly runs ss and fails if pid has a TCP connection to a non-loopback address, or if any socket to
// the admin port (the operator's scrapes, including closed ones in TIME-WAIT) has a non-loopback peer.
func checkLoopbackOnly(pid int, adminPort string) (socketCheck, error) {
	out, err := exec.Command("ss", "-tanpH").Output()
	if err != nil {
		return socketCheck{}, fmt.Errorf("ss -tanpH: %w", err)
	}
	var c socketCheck
	c.operatorSockets = strings.Count(string(out), fmt.Sprintf("pid=%d,", pid))
	if bad := nonLoopbackPeers(string(out), pid); len(bad) > 0 {
		return c, fmt.Errorf("process %d has TCP sockets to non-loopback peers: %s", pid, strings.Join(bad, " "))
	}
	for _, peer := range peersOnPort(string(out), adminPort) {
		c.scrapeSockets++
		host, _, _ := net.SplitHostPort(peer)
		if !isLoopbackIP(host) {
			return c, fmt.Errorf("a socket to the admin port has the non-loopback peer %s", peer)
		}
	}
	return c, nil
}
