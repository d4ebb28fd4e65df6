package main

import (
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
)

// impairment decides the fate of each datagram in one direction of a relay: forwarded, dropped or forwarded with
// one byte changed, from an RNG seeded per case and direction. The same seed gives the same fates to the same
// datagram numbers on every run, so a loss case is the same loss pattern each time (the datagrams' contents vary
// with timing, their numbering does not).
type impairment struct {
	dropPct    int // datagrams dropped, per cent
	corruptPct int // datagrams with one byte changed, per cent
	limit      int // forward at most this many (0: all), the rest dropped
	rng        *rand.Rand
	n          int
}

func impair(seed uint64, dropPct, corruptPct int) *impairment {
	return &impairment{dropPct: dropPct, corruptPct: corruptPct, rng: rand.New(rand.NewPCG(seed, 0x68332d696e7465))}
}

// clean forwards everything.
func clean() *impairment { return impair(0, 0, 0) }

// only forwards the first n datagrams.
func only(n int) *impairment { im := clean(); im.limit = n; return im }

// apply says whether `b` goes on, after changing one of its bytes if the RNG says so.
func (im *impairment) apply(b []byte) bool {
	im.n++
	if im.limit > 0 && im.n > im.limit {
		return false
	}
	if im.dropPct > 0 && im.rng.IntN(100) < im.dropPct {
		return false
	}
	if im.corruptPct > 0 && len(b) > 0 && im.rng.IntN(100) < im.corruptPct {
		b[im.rng.IntN(len(b))] ^= byte(1 + im.rng.IntN(255))
	}
	return true
}

// relay is the path between one client socket and the server, under the test's control: it forwards datagrams
// both ways through an impairment each, counts what it forwarded, and can rebind (a new upstream socket, so the
// server sees the client at a new port or address, as after a NAT's mapping changed).
type relay struct {
	front  *net.UDPConn // the client sends here
	server *net.UDPAddr
	c2s    *impairment
	s2c    *impairment

	mu     sync.Mutex // guards client, up and the impairments (the upstream readers overlap after a rebind)
	client *net.UDPAddr
	up     *net.UDPConn

	c2sBytes, s2cBytes atomic.Int64
	c2sDatagrams       atomic.Int64
	s2cSizes           []int            // the sizes of the first datagrams forwarded to the client (under mu)
	s2cTo              map[string]int64 // bytes forwarded to each client address (under mu)
}

func newRelay(server *net.UDPAddr, c2s, s2c *impairment) (*relay, error) {
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: loopbackOf(server)})
	if err != nil {
		return nil, err
	}
	r := &relay{front: front, server: server, c2s: c2s, s2c: s2c, s2cTo: map[string]int64{}}
	if err := r.rebind(loopbackOf(server)); err != nil {
		front.Close()
		return nil, err
	}
	go r.fromClient()
	return r, nil
}

func loopbackOf(a *net.UDPAddr) net.IP {
	if a.IP.To4() == nil {
		return net.IPv6loopback
	}
	return net.IPv4(127, 0, 0, 1)
}

func (r *relay) addr() *net.UDPAddr { return r.front.LocalAddr().(*net.UDPAddr) }

// rebind replaces the upstream socket with a new one on `ip` (port chosen by the kernel) and closes the old one:
// the server's datagrams to the old port are lost, as they are behind a NAT that forgot the mapping.
func (r *relay) rebind(ip net.IP) error {
	up, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip})
	if err != nil {
		return err
	}
	r.mu.Lock()
	old := r.up
	r.up = up
	r.mu.Unlock()
	if old != nil {
		old.Close()
	}
	go r.fromServer(up)
	return nil
}

func (r *relay) fromClient() {
	buf := make([]byte, 1<<16)
	for {
		n, from, err := r.front.ReadFromUDP(buf)
		if err != nil {
			return
		}
		r.mu.Lock()
		r.client = from
		up := r.up
		ok := r.c2s.apply(buf[:n])
		r.mu.Unlock()
		if ok {
			if _, err := up.WriteToUDP(buf[:n], r.server); err == nil {
				r.c2sBytes.Add(int64(n))
				r.c2sDatagrams.Add(1)
			}
		}
	}
}

func (r *relay) fromServer(up *net.UDPConn) {
	buf := make([]byte, 1<<16)
	for {
		n, _, err := up.ReadFromUDP(buf)
		if err != nil {
			return
		}
		r.mu.Lock()
		to := r.client
		ok := r.s2c.apply(buf[:n])
		r.mu.Unlock()
		if ok && to != nil {
			if _, err := r.front.WriteToUDP(buf[:n], to); err == nil {
				r.s2cBytes.Add(int64(n))
				r.mu.Lock()
				if len(r.s2cSizes) < 16 {
					r.s2cSizes = append(r.s2cSizes, n)
				}
				r.s2cTo[to.String()] += int64(n)
				r.mu.Unlock()
			}
		}
	}
}

// sentTo is what was forwarded to the client at `addr` so far.
func (r *relay) sentTo(addr string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.s2cTo[addr]
}

func (r *relay) close() {
	r.front.Close()
	r.mu.Lock()
	r.up.Close()
	r.mu.Unlock()
}
