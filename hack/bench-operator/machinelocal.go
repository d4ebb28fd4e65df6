package main

import (
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"time"
)

// Machine-local addresses: what the harness lets kwok give its pods and nodes, and lets the operator's sockets
// reach. Two modes:
//
//   - loopback: the pod CIDR and node IP are in 127.0.0.0/8 (or ::1 for the node). Nothing leaves the machine,
//     but the API server refuses these addresses in an EndpointSlice, so a pool site is never Ready.
//   - isolated: the harness runs in a network namespace whose only interface is lo (netns.sh, `make
//     bench-operator`'s default), with a `local` route for the benchmarking range 198.18.0.0/15 there. The pod
//     CIDR and node IP must be local in that namespace: a socket binds to each end of each range and a
//     connection to it from this process succeeds, while the same fails for an address outside them (a bind
//     alone proves nothing: in a fresh namespace with no local table yet, every bind succeeds). With no
//     interface but lo there is no way out: an address that is not local has no route. The API server accepts
//     these addresses in an EndpointSlice.
//
// Anything else is refused before a process starts.

// machineLocal is the addresses proven to stay on this machine: loopback always and, when isolated, local.
type machineLocal struct {
	isolated bool           // in a network namespace whose only interface is lo
	local    []netip.Prefix // (isolated only) the pod CIDR and the node IP, each proven local there
}

// contains says whether ip (no port) is machine-local: loopback, or inside a range proven local when isolated.
func (m machineLocal) contains(ip string) bool {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	a = a.Unmap()
	if a.IsLoopback() {
		return true
	}
	if !m.isolated {
		return false
	}
	for _, p := range m.local {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// String says which mode, for the report.
func (m machineLocal) String() string {
	if !m.isolated {
		return "loopback only (127.0.0.0/8, ::1)"
	}
	ranges := make([]string, 0, len(m.local))
	for _, p := range m.local {
		ranges = append(ranges, p.String())
	}
	return "a network namespace whose only interface is lo: loopback, and " + strings.Join(ranges, ", ") + " (local there)"
}

// netProbe looks at the network namespace the harness runs in (a func each, so tests can stand in).
type netProbe struct {
	interfaces func() ([]string, error) // every interface's name, through netlink: this namespace's
	reach      func(netip.Addr) error   // listen on the address (port 0), connect to it, close both
}

// hostProbe is the real one. Not /sys/class/net: sysfs shows the namespace of whoever mounted it, and
// `unshare -n` does not remount it, so it lists the host's interfaces; netlink and /proc/self/net answer for
// the caller's namespace.
var hostProbe = netProbe{
	interfaces: func() ([]string, error) {
		ifs, err := net.Interfaces()
		if err != nil {
			return nil, err
		}
		names := make([]string, 0, len(ifs))
		for _, i := range ifs {
			names = append(names, i.Name)
		}
		return names, nil
	},
	reach: func(a netip.Addr) error {
		ln, err := net.Listen("tcp", netip.AddrPortFrom(a, 0).String())
		if err != nil {
			return err
		}
		defer ln.Close()
		conn, err := net.DialTimeout("tcp", ln.Addr().String(), 2*time.Second)
		if err != nil {
			return err
		}
		return conn.Close()
	},
}

// controlAddrs are addresses that must not be local where the harness runs (TEST-NET-1 and -3, RFC 5737): if
// one is reachable, reaching the pod CIDR proves nothing. The first outside the ranges checked is used.
var controlAddrs = []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("203.0.113.1")}

// isLoopbackPrefix says whether every address of p is loopback.
func isLoopbackPrefix(p netip.Prefix) bool {
	a := p.Masked().Addr()
	return a.IsLoopback() && (a.Is4() && p.Bits() >= 8 || a.Is6() && p.Bits() == 128)
}

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// machineLocalFor decides the mode for kwok's pod CIDR and node IP, or refuses: loopback addresses need
// nothing more; any other needs the isolated namespace, checked with probe.
func machineLocalFor(podCIDR netip.Prefix, nodeIP netip.Addr, probe netProbe) (machineLocal, error) {
	nodePrefix := netip.PrefixFrom(nodeIP, nodeIP.BitLen())
	if isLoopbackPrefix(podCIDR) && nodeIP.IsLoopback() {
		return machineLocal{}, nil
	}
	where := fmt.Sprintf("-pod-cidr %s and -node-ip %s are not both loopback", podCIDR, nodeIP)
	names, err := probe.interfaces()
	if err != nil {
		return machineLocal{}, fmt.Errorf("%s, and the network interfaces could not be listed: %w", where, err)
	}
	if len(names) != 1 || names[0] != "lo" {
		return machineLocal{}, fmt.Errorf("%s, and this network namespace has the interfaces %v, not lo alone: "+
			"refusing to run, whose pods' addresses could leave the machine (run under hack/bench-operator/netns.sh, "+
			"as `make bench-operator` does, or give loopback addresses)", where, names)
	}
	ranges := []netip.Prefix{podCIDR, nodePrefix}
	for _, p := range ranges {
		for _, a := range []netip.Addr{p.Masked().Addr(), lastAddr(p)} {
			if err := probe.reach(a); err != nil {
				return machineLocal{}, fmt.Errorf("%s, and %s (of %s) is not local in this network namespace "+
					"(add a `local` route for it on lo, as hack/bench-operator/netns.sh does): %w", where, a, p, err)
			}
		}
	}
	for _, ctl := range controlAddrs {
		if ranges[0].Contains(ctl) || ranges[1].Contains(ctl) {
			continue
		}
		if probe.reach(ctl) == nil {
			return machineLocal{}, fmt.Errorf("%s, and %s, outside them, is reachable in this network namespace too: "+
				"reaching them proves nothing, refusing to run", where, ctl)
		}
		return machineLocal{isolated: true, local: ranges}, nil
	}
	return machineLocal{}, fmt.Errorf("%s, and they hold every control address %v: choose narrower ranges", where, controlAddrs)
}

// recheck fails if, isolated, the namespace has gained an interface since the start.
func (m machineLocal) recheck(probe netProbe) error {
	if !m.isolated {
		return nil
	}
	names, err := probe.interfaces()
	if err != nil {
		return err
	}
	if len(names) != 1 || names[0] != "lo" {
		return fmt.Errorf("the network namespace has the interfaces %v now, not lo alone", names)
	}
	return nil
}

// nonLocalPeers reads `ss -tnpH` output and returns the peer addresses of pid's TCP sockets that are not
// machine-local. A listening socket's peer is a wildcard ("0.0.0.0:*", "[::]:*", "*:*"): not a connection, skipped.
func nonLocalPeers(ssOutput string, pid int, m machineLocal) []string {
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
		if !m.contains(host) {
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

// checkMachineLocalOnly runs ss and fails if pid has a TCP connection to an address that is not machine-local,
// or if any socket to the admin port (the operator's scrapes, including closed ones in TIME-WAIT) has such a
// peer; isolated, it also fails if the namespace has gained an interface. ss sees the harness' namespace only,
// where every process of the run is.
func checkMachineLocalOnly(pid int, adminPort string, m machineLocal) (socketCheck, error) {
	if err := m.recheck(hostProbe); err != nil {
		return socketCheck{}, err
	}
	out, err := exec.Command("ss", "-tanpH").Output()
	if err != nil {
		return socketCheck{}, fmt.Errorf("ss -tanpH: %w", err)
	}
	var c socketCheck
	c.operatorSockets = strings.Count(string(out), fmt.Sprintf("pid=%d,", pid))
	if bad := nonLocalPeers(string(out), pid, m); len(bad) > 0 {
		return c, fmt.Errorf("process %d has TCP sockets to peers that are not machine-local: %s", pid, strings.Join(bad, " "))
	}
	for _, peer := range peersOnPort(string(out), adminPort) {
		c.scrapeSockets++
		host, _, _ := net.SplitHostPort(peer)
		if !m.contains(host) {
			return c, fmt.Errorf("a socket to the admin port has the peer %s, which is not machine-local", peer)
		}
	}
	return c, nil
}
