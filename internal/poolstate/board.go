// Package poolstate is what the pool controller learns about each pool site from the pool's pods and fetcher,
// kept in the manager's memory for the site controller, which reports it in the site's status (placement,
// condition Placed). One pass of the pool controller reads every pool pod's /sites and the fetcher's /sites once
// (docs/design/pools.md), whatever the number of sites, and publishes the result here; the site controller never
// calls a pool pod itself, so a site's reconcile costs nothing that grows with the pool.
//
// Publish announces only the sites whose state changed, as controller-runtime generic events on Events(), which
// the site controller watches (source.Channel): a pass that changes nothing wakes no site. A site's traffic
// (automatic placement, internal/autoplacement) changes on almost every pass: its rate is kept without an
// announcement, and only a change of its band (or since when it is in it) is announced, so a site wakes when its
// traffic crosses a threshold, not whenever it moves. After an operator
// restart the board starts empty: a site then reads "not known yet" (Placed Unknown) until the pool's first pass.
package poolstate

import (
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/autoplacement"
)

// Served is one pool site as its pool last saw it.
type Served struct {
	// Pool serving the site.
	Pool string
	// ServedBy: ready pool pods serving the site's current value and content; ReadyPods: ready pool pods.
	ServedBy, ReadyPods int32
	// Bundle is the fetcher's current bundle of the site (empty: none yet); Commit its Git commit.
	Bundle, Commit string
	// FetchError is the fetcher's last failure for the site, PodError a pool pod's (e.g. the tree refused by the
	// site's limits); empty when none.
	FetchError, PodError string
	// Traffic is a site's measured traffic and its band (only for sites with automatic placement; zero for the
	// others).
	Traffic autoplacement.Traffic
}

// announces reports whether s differs from old in what announces a change: everything but the traffic's rate
// (the band's start compared as an instant).
func (s Served) announces(old Served) bool {
	if !s.Traffic.Since.Equal(old.Traffic.Since) {
		return true
	}
	s.Traffic.RPS, old.Traffic.RPS = 0, 0
	s.Traffic.Since, old.Traffic.Since = time.Time{}, time.Time{}
	return s != old
}

// Board holds the latest Served of every pool site, by site id (poolindex.ID).
type Board struct {
	mu     sync.RWMutex
	sites  map[string]Served
	events chan event.GenericEvent
}

// New is an empty board whose Events channel buffers buffer announcements.
func New(buffer int) *Board {
	return &Board{sites: map[string]Served{}, events: make(chan event.GenericEvent, buffer)}
}

// Events announces the sites whose Served changed (a StaticSite with only namespace and name set).
func (b *Board) Events() chan event.GenericEvent { return b.events }

// Get is the latest Served of site id, false when no pool has published it.
func (b *Board) Get(id string) (Served, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	s, ok := b.sites[id]
	return s, ok
}

// Publish replaces everything pool said before with sites (by id) and announces each site that changed, appeared
// or disappeared. It blocks while the events buffer is full (the site controller drains it).
func (b *Board) Publish(pool string, sites map[string]Served) {
	var changed []string
	b.mu.Lock()
	for id, old := range b.sites {
		if old.Pool != pool {
			continue
		}
		if _, still := sites[id]; !still {
			delete(b.sites, id)
			changed = append(changed, id)
		}
	}
	for id, s := range sites {
		s.Pool = pool
		old, ok := b.sites[id]
		b.sites[id] = s
		if !ok || s.announces(old) {
			changed = append(changed, id)
		}
	}
	b.mu.Unlock()
	for _, id := range changed {
		ns, name, _ := strings.Cut(id, ".")
		b.events <- event.GenericEvent{Object: &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
	}
}
