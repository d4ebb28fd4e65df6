package pool

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/internal/podstate"
	"hyperstatic.dev/hyperstatic/internal/podtext"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
	"hyperstatic.dev/hyperstatic/internal/poolread"
	"hyperstatic.dev/hyperstatic/internal/poolstate"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// reconcileServed reads, once each, every ready pool pod's /sites and the fetcher's /sites (internal/poolread:
// bounded, unknown sites dropped) and publishes per site what the pool serves to the Board: a ready pod serves a
// site when it reports the revision of the whole entry the operator rendered into the index
// (poolindex.EntryRevision: hostnames, value, limits and content source, so a pod whose host map lacks a new
// hostname does not count) and the content revision of the fetcher's current bundle, and has not refused the
// site's tree; and, per pod read, how many sites of the index its answer lacks, for the re-tell (step_retell.go).
// The pass runs again soon while a site is not served by every ready pod (sooner right after the pods were told of
// the index: served_retry.go), and slowly otherwise (a new commit reaches the fetcher and the pods without a
// Kubernetes event), and at least every TrafficInterval while the pool has sites placed automatically (their
// traffic is measured from the same answers).
func (r *Reconciler) reconcileServed(ctx context.Context, o *observation) error {
	ns := o.pool.Spec.Namespace
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(poolplacement.PodSelector(o.pool.Name))); err != nil {
		return fmt.Errorf("list the pool's pods: %w", err)
	}
	fetchers := &corev1.PodList{}
	if err := r.List(ctx, fetchers, client.InNamespace(ns), client.MatchingLabels(poolplacement.FetcherSelector(o.pool.Name))); err != nil {
		return fmt.Errorf("list the pool's fetcher: %w", err)
	}
	ids := make(map[string]bool, len(o.admitted))
	for _, a := range o.admitted {
		ids[a.entry.ID] = true
	}
	keep := func(id string) bool { return ids[id] }
	entries := indexEntries(o)

	var fetched map[string]poolread.FetcherSite
	if f := runningPod(fetchers.Items); f != nil && r.Reader != nil && len(ids) > 0 {
		var err error
		if fetched, err = r.Reader.FetcherSites(ctx, f, keep); err != nil {
			o.unreadable = append(o.unreadable, podtext.Clean(err.Error(), 256))
		} else {
			// It lists every site of the index it read, bundle or none, without entry revisions: a site absent is
			// an entry it has not read.
			o.indexLags = append(o.indexLags, indexLag{pod: f, lacking: lacking(entries, fetched, func(poolread.FetcherSite) string { return "" })})
		}
	}
	type podSites struct {
		name  string
		sites map[string]poolread.ServerSite
	}
	var read []podSites
	var counts []poolPodCounts // for the traffic: every ready pod, nil sites when unreadable
	for i := range pods.Items {
		p := &pods.Items[i]
		if !podstate.Serving(p) {
			// A terminating pod holding its drain still serves what the slices not yet rewritten send it (and, in
			// a pool with no ready pod, every request: the slices list it as serving): its traffic counts (else an
			// eviction or a rollout reads as the pool going quiet and scales it down), nothing else of it does
			// (step_release.go).
			if poolplacement.HoldingDrain(p) && r.Reader != nil && len(ids) > 0 {
				sites, _ := r.Reader.ServerSites(ctx, p, keep) // unreadable: its share unknown, as for a ready pod
				counts = append(counts, poolPodCounts{uid: string(p.UID), sites: sites})
			}
			continue
		}
		o.readyPods++
		if r.Reader == nil || len(ids) == 0 {
			counts = append(counts, poolPodCounts{uid: string(p.UID)})
			continue
		}
		sites, err := r.Reader.ServerSites(ctx, p, keep)
		counts = append(counts, poolPodCounts{uid: string(p.UID), sites: sites})
		if err != nil {
			o.unreadable = append(o.unreadable, podtext.Clean(err.Error(), 256))
			continue
		}
		read = append(read, podSites{p.Name, sites})
		o.indexLags = append(o.indexLags, indexLag{pod: p, lacking: lacking(entries, sites, func(s poolread.ServerSite) string { return s.EntryRevision })})
	}
	slices.SortFunc(read, func(a, b podSites) int { return strings.Compare(a.name, b.name) })

	o.served = make(map[string]poolstate.Served, len(o.admitted))
	for _, a := range o.admitted {
		f := fetched[a.entry.ID]
		s := poolstate.Served{ReadyPods: o.readyPods, Bundle: f.Bundle, Commit: f.Commit, FetchError: f.Error}
		entry := entries[a.entry.ID] // "" (not in the index) matches no pod
		content := poolread.ContentRevision(f.Bundle)
		for _, p := range read {
			got, ok := p.sites[a.entry.ID]
			switch {
			case ok && entry != "" && content != "" && got.EntryRevision == entry && got.ContentRevision == content &&
				got.State != stateRefused:
				s.ServedBy++
			case ok && got.Error != "" && s.PodError == "":
				s.PodError = p.name + ": " + got.Error
			}
		}
		o.served[a.entry.ID] = s
	}
	r.measureTraffic(ctx, o, counts) // step_traffic.go
	r.measureScale(o, counts)        // step_scale.go
	r.publish(o.pool.Name, o.served)
	if pendingSites(o) > 0 || len(o.unreadable) > 0 {
		o.requeue(servedRetryAfter(o.now, lastTold(r.memoryOf(o.pool.Name).told, o.indexRevision), o.tun.servedRetry))
	} else {
		o.requeue(o.tun.servedRefresh)
	}
	return nil
}

// indexEntries are the entry revisions (poolindex.EntryRevision) of the sites in the index, by id: the admitted
// sites whose mirrors all exist (step_index.go). An entry Render could not encode was never written: it is left out.
func indexEntries(o *observation) map[string]string {
	out := make(map[string]string, len(o.admitted))
	for _, a := range o.admitted {
		if o.unmirrored[a.entry.ID] {
			continue
		}
		if entry, err := poolindex.EntryRevision(a.entry); err == nil && entry != "" {
			out[a.entry.ID] = entry
		}
	}
	return out
}

// stateRefused is a pool pod's /sites state of a site whose tree (or value with it) it refused: it answers 503.
const stateRefused = "refused"

// pendingSites counts the sites not yet served by every ready pod whose fetcher has no failure to report (a site
// whose fetch fails is the site's problem, said in its own status; it does not hold the pool back).
func pendingSites(o *observation) int {
	n := 0
	for _, s := range o.served {
		if s.FetchError != "" && s.Bundle == "" {
			continue
		}
		if s.ReadyPods == 0 || s.ServedBy < s.ReadyPods {
			n++
		}
	}
	return n
}

// runningPod is the first pod that runs and is not terminating (the fetcher answers /sites before it is ready).
func runningPod(pods []corev1.Pod) *corev1.Pod {
	for i := range pods {
		if p := &pods[i]; p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			return p
		}
	}
	return nil
}
