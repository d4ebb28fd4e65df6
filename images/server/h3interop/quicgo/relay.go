package main

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
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
//
// A rebinding takes effect with the client's next datagram, as a NAT's new mapping does: that datagram leaves from
// the new socket and the old one is closed, so what the server sends to the old port from then on is lost. (Closing
// the old socket at once instead, whenever the test asks, stalled the transfer now and then: a client that is only
// receiving and has already acknowledged everything that reached it sends nothing more, so the server never learns
// the new port and no server could reach it; see images/server/README.md, rebind-port.)
type relay struct {
	front  *net.UDPConn // the client sends here
	server *net.UDPAddr
	c2s    *impairment
	s2c    *impairment

	mu     sync.Mutex // guards client, up, next, legs and the impairments (the upstream readers overlap)
	client *net.UDPAddr
	up     *net.UDPConn
	next   *net.UDPConn // the upstream socket the client's next datagram moves to (a rebinding asked for)
	legs   []*leg       // one per upstream socket, the current one last (then the next one, if any)

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
	up, err := net.ListenUDP("udp", &net.UDPAddr{IP: loopbackOf(server)})
	if err != nil {
		front.Close()
		return nil, err
	}
	l := &leg{addr: up.LocalAddr().String()}
	r := &relay{front: front, server: server, c2s: c2s, s2c: s2c, s2cTo: map[string]int64{}, up: up,
		legs: []*leg{l}}
	go r.fromServer(up, l)
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

// leg is what went through one upstream socket (one client address as the server sees it), for a case's report:
// when the client's first datagram took it, who stopped talking, and when.
type leg struct {
	addr             string
	c2s, s2c         int       // datagrams forwarded each way
	s2cBytes         int64     // bytes forwarded to the client
	lastC2S, lastS2C time.Time // when the last one each way was forwarded
	asked, moved     time.Time // when the rebinding to it was asked for, and when the client's datagram took it
}

// rebind opens a new upstream socket on `ip` (port chosen by the kernel), which the client's next datagram moves
// to; the old socket is closed then, and the server's datagrams to the old port are lost, as they are behind a NAT
// whose mapping changed.
func (r *relay) rebind(ip net.IP) error {
	up, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip})
	if err != nil {
		return err
	}
	l := &leg{addr: up.LocalAddr().String(), asked: time.Now()}
	r.mu.Lock()
	if r.next != nil {
		r.mu.Unlock()
		up.Close()
		return fmt.Errorf("a rebinding is already waiting for the client's next datagram")
	}
	r.next = up
	r.legs = append(r.legs, l)
	r.mu.Unlock()
	go r.fromServer(up, l)
	return nil
}

// legs says, for each upstream socket, what it forwarded each way and how long ago the last datagram was.
func (r *relay) describeLegs() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	ago := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return fmt.Sprintf("%.3f s ago", now.Sub(t).Seconds())
	}
	var b strings.Builder
	for i, l := range r.legs {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "upstream %s", l.addr)
		if !l.asked.IsZero() {
			fmt.Fprintf(&b, " (asked for %s, taken by the client %s)", ago(l.asked), ago(l.moved))
		}
		fmt.Fprintf(&b, ": to the server %d datagrams (last %s), to the client %d (last %s)", l.c2s, ago(l.lastC2S),
			l.s2c, ago(l.lastS2C))
	}
	return b.String()
}

func (r *relay) fromClient() {
	buf := make([]byte, 1<<16)
	for {
		n, from, err := r.front.ReadFromUDP(buf)
		if err != nil {
			return
		}
		// Under the lock throughout: a datagram always leaves from the socket that is current when it is sent.
		r.mu.Lock()
		r.client = from
		if r.next != nil {
			r.up.Close()
			r.up, r.next = r.next, nil
			r.legs[len(r.legs)-1].moved = time.Now()
		}
		l := r.legs[len(r.legs)-1]
		if r.c2s.apply(buf[:n]) {
			if _, err := r.up.WriteToUDP(buf[:n], r.server); err == nil {
				l.c2s++
				l.lastC2S = time.Now()
				r.c2sBytes.Add(int64(n))
				r.c2sDatagrams.Add(1)
			}
		}
		r.mu.Unlock()
	}
}

func (r *relay) fromServer(up *net.UDPConn, l *leg) {
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
				l.s2c++
				l.s2cBytes += int64(n)
				l.lastS2C = time.Now()
				if len(r.s2cSizes) < 16 {
					r.s2cSizes = append(r.s2cSizes, n)
				}
				r.s2cTo[to.String()] += int64(n)
				r.mu.Unlock()
			}
		}
	}
}

// lastLeg is a copy of the newest upstream socket's record (after a rebinding: the one it asked for).
func (r *relay) lastLeg() leg {
	r.mu.Lock()
	defer r.mu.Unlock()
	return *r.legs[len(r.legs)-1]
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
	if r.next != nil {
		r.next.Close()
	}
	r.mu.Unlock()
}
