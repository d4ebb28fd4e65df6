package autoscaling

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
)

// loadModel stands in for the servers' hyperstatic_requests_total and for kube-proxy: each site ("namespace/name")
// receives a total request rate, spread evenly over the pods that currently receive traffic (the fake kubelet
// says which), and each pod's counter grows by its share over the model's clock. It is the autoscaler's
// podmetrics.Scraper. Counters are exact integrals of the rates, so a rate the autoscaler computes from two scrapes
// is exactly the share the pod had between them, whatever the clock.
type loadModel struct {
	clock clock.PassiveClock

	mu    sync.Mutex
	sites map[string]*siteLoad
	pods  map[types.UID]*podCounter
}

type siteLoad struct {
	rps     float64
	serving map[types.UID]bool
	scrapes int
}

type podCounter struct {
	site  string
	at    time.Time
	value float64
}

// initialRequests is a new pod's counter: a server that already served some requests, so the autoscaler's rates
// never depend on counters starting at zero.
const initialRequests = 1000

func newLoadModel(c clock.PassiveClock) *loadModel {
	return &loadModel{clock: c, sites: map[string]*siteLoad{}, pods: map[types.UID]*podCounter{}}
}

func siteKey(ns, name string) string { return ns + "/" + name }

// setRPS sets the site's total request rate from now on.
func (l *loadModel) setRPS(site string, rps float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.settle(site)
	l.site(site).rps = rps
}

// serve starts sending the pod its share of the site's traffic.
func (l *loadModel) serve(site string, pod types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.settle(site)
	l.counter(site, pod)
	l.site(site).serving[pod] = true
}

// unserve stops sending the pod traffic.
func (l *loadModel) unserve(site string, pod types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.settle(site)
	delete(l.site(site).serving, pod)
}

// Scrape returns the pod's counter as of now.
func (l *loadModel) Scrape(_ context.Context, pod *corev1.Pod) (podmetrics.Sample, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	site := siteKey(pod.Namespace, pod.Labels[v1alpha1.LabelSite])
	l.site(site).scrapes++
	l.settle(site)
	c := l.counter(site, pod.UID)
	return podmetrics.Sample{Pod: pod.Name, Time: c.at, Requests: c.value}, nil
}

// scrapesOf is how many scrapes of the site's pods the autoscaler made.
func (l *loadModel) scrapesOf(site string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.site(site).scrapes
}

// settle brings every counter of the site up to now at the shares that held since it was last settled; it runs
// before anything that changes a share.
func (l *loadModel) settle(site string) {
	now := l.clock.Now()
	s := l.site(site)
	for uid, c := range l.pods {
		if c.site != site {
			continue
		}
		if s.serving[uid] {
			c.value += s.rps / float64(len(s.serving)) * now.Sub(c.at).Seconds()
		}
		c.at = now
	}
}

func (l *loadModel) site(site string) *siteLoad {
	s, ok := l.sites[site]
	if !ok {
		s = &siteLoad{serving: map[types.UID]bool{}}
		l.sites[site] = s
	}
	return s
}

func (l *loadModel) counter(site string, pod types.UID) *podCounter {
	c, ok := l.pods[pod]
	if !ok {
		c = &podCounter{site: site, at: l.clock.Now(), value: initialRequests}
		l.pods[pod] = c
	}
	return c
}
