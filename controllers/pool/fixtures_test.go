// Fixtures the envtest tests share: pools, sites and ConfigMaps created as a platform team and tenants would, the
// index read back, and the Deployment controller's and kubelet's parts played by hand.

package pool

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
	"hyperstatic.dev/hyperstatic/internal/poolread"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// createPool creates a pool whose objects live in ns, admitting namespaces, with shards index shards.
func createPool(t *testing.T, ns string, namespaces []string, shards int32) *v1alpha1.StaticSitePool {
	t.Helper()
	p := &v1alpha1.StaticSitePool{ObjectMeta: metav1.ObjectMeta{Name: uniqueName("pool")},
		Spec: v1alpha1.StaticSitePoolSpec{Namespace: ns, Namespaces: namespaces, IndexShards: ptr.To(shards)}}
	testenv.Must(t, k8s.Create(context.Background(), p))
	// Gone at the end of the test, so its passes (every 200 ms while a site is not served) do not slow the
	// passes of the tests after it. envtest has no garbage collector: its objects stay, and wake nothing.
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), p) })
	return p
}

// configMapSite creates a site in ns placed in pool, serving the named ConfigMaps.
func configMapSite(t *testing.T, ns, name, pool string, configMaps ...string) *v1alpha1.StaticSite {
	t.Helper()
	spec := v1alpha1.StaticSiteSpec{Placement: &v1alpha1.PlacementSpec{Mode: v1alpha1.PlacementPool, Pool: pool}}
	for _, cm := range configMaps {
		spec.Content.ConfigMaps = append(spec.Content.ConfigMaps, v1alpha1.ConfigMapContent{Name: cm})
	}
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	testenv.Must(t, k8s.Create(context.Background(), site))
	return site
}

// gitSite creates a site in ns placed in pool, serving a public repository.
func gitSite(t *testing.T, ns, name, pool string) *v1alpha1.StaticSite {
	t.Helper()
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.StaticSiteSpec{
		Placement: &v1alpha1.PlacementSpec{Mode: v1alpha1.PlacementPool, Pool: pool},
		Content:   v1alpha1.ContentSource{Git: &v1alpha1.GitContent{URL: "https://git.example/" + name + ".git", Ref: "main"}}}}
	testenv.Must(t, k8s.Create(context.Background(), site))
	return site
}

func createConfigMap(t *testing.T, ns, name string, data map[string]string, binary map[string][]byte) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data, BinaryData: binary}
	testenv.Must(t, k8s.Create(context.Background(), cm))
	return cm
}

// updateSite changes a site's spec as a user would, retrying on conflicts.
func updateSite(t *testing.T, site *v1alpha1.StaticSite, mutate func(*v1alpha1.StaticSite)) {
	t.Helper()
	testenv.Eventually(t, "update site", func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(site), site); err != nil {
			return err
		}
		mutate(site)
		return k8s.Update(context.Background(), site)
	})
}

// shard reads index shard i of pool as the pool's pods would (poolindex.Parse), with its ConfigMap.
func shard(t *testing.T, pool *v1alpha1.StaticSitePool, i int) (poolindex.Shard, *corev1.ConfigMap, error) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: pool.Spec.Namespace, Name: poolplacement.IndexName(pool.Name, i)}, cm); err != nil {
		return poolindex.Shard{}, nil, err
	}
	data, ok := cm.Data[poolplacement.IndexKey(i)]
	if !ok {
		return poolindex.Shard{}, cm, fmt.Errorf("shard %d has no key %s", i, poolplacement.IndexKey(i))
	}
	s, err := poolindex.Parse([]byte(data))
	return s, cm, err
}

// storedIndexRevision is the revision of the index as its shard ConfigMaps hold it ("" while one is unreadable).
func storedIndexRevision(t *testing.T, pool *v1alpha1.StaticSitePool) string {
	t.Helper()
	shards := make([][]byte, *pool.Spec.IndexShards)
	for i := range shards {
		_, cm, err := shard(t, pool, i)
		if err != nil {
			return ""
		}
		shards[i] = []byte(cm.Data[poolplacement.IndexKey(i)])
	}
	return indexRevision(shards)
}

// indexIDs reads every shard and returns the site ids of the index, checking each is in its own shard.
func indexIDs(t *testing.T, pool *v1alpha1.StaticSitePool) (map[string]poolindex.Site, error) {
	t.Helper()
	n := int(*pool.Spec.IndexShards)
	out := map[string]poolindex.Site{}
	for i := range n {
		s, _, err := shard(t, pool, i)
		if err != nil {
			return nil, err
		}
		if s.Shard != i {
			return nil, fmt.Errorf("shard %d says it is shard %d", i, s.Shard)
		}
		for _, site := range s.Sites {
			if want := poolindex.ShardOf(site.ID, n); want != i {
				return nil, fmt.Errorf("site %s in shard %d, want %d", site.ID, i, want)
			}
			out[site.ID] = site
		}
	}
	return out, nil
}

func getDeployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	testenv.Eventually(t, "Deployment "+name, func() error { return k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d) })
	return d
}

// completeRollout plays the Deployment controller: every replica updated, ready and available.
func completeRollout(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	ctx := context.Background()
	testenv.Eventually(t, "Deployment status update", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		n := *d.Spec.Replicas
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
		return k8s.Status().Update(ctx, d)
	})
}

// runPod plays the ReplicaSet controller and the kubelet for one pod of d: created from its template (admission
// checks it: the namespaces enforce the restricted Pod Security Standard), then running and ready.
func runPod(t *testing.T, d *appsv1.Deployment, name string) *corev1.Pod {
	t.Helper()
	return startPod(t, d, name, corev1.ConditionTrue)
}

// startPod is runPod with the pod's Ready condition as given, since it started: a pod that runs but is not ready
// (its puller still pulling the sites' trees) is ConditionFalse. Started a minute ago, so that its condition
// turned before any deletion the test asks for, in whole seconds as the API keeps them.
func startPod(t *testing.T, d *appsv1.Deployment, name string, ready corev1.ConditionStatus) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: name, Labels: d.Spec.Template.Labels},
		Spec: *d.Spec.Template.Spec.DeepCopy()}
	p.Spec.NodeName = "node-1"
	testenv.Must(t, k8s.Create(context.Background(), p))
	setRunning(t, p, "127.0.0.1", ready, metav1.NewTime(time.Now().Add(-time.Minute)))
	return p
}

// markRunning plays the kubelet: the pod runs at ip and is ready.
func markRunning(t *testing.T, p *corev1.Pod, ip string) {
	t.Helper()
	setRunning(t, p, ip, corev1.ConditionTrue, metav1.Now())
}

// setRunning plays the kubelet: the pod runs at ip, its Ready condition as given, turned at since.
func setRunning(t *testing.T, p *corev1.Pod, ip string, ready corev1.ConditionStatus, since metav1.Time) {
	t.Helper()
	ctx := context.Background()
	testenv.Eventually(t, fmt.Sprintf("pod %s running, Ready %s", p.Name, ready), func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP = ip
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready, LastTransitionTime: since}}
		return k8s.Status().Update(ctx, p)
	})
}

// sitesServer answers GET /sites with whatever JSON it is given, as a pool pod's admin port or the fetcher would,
// and POST /drain/release with releaseStatus (200 unless a test says otherwise: a deleted pod has had its SIGTERM).
type sitesServer struct {
	mu    sync.Mutex
	body  any
	srv   *httptest.Server
	calls int
	// releases counts the POST /drain/release it was sent; releaseStatus is its answer.
	releases, releaseStatus int
}

func newSitesServer(t *testing.T, ns, pod string) *sitesServer {
	t.Helper()
	s := &sitesServer{body: map[string]any{"sites": []any{}}, releaseStatus: http.StatusOK}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == poolread.ReleasePath {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.releases++
			w.WriteHeader(s.releaseStatus)
			return
		}
		if r.URL.Path != "/sites" {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.calls++
		_ = json.NewEncoder(w).Encode(s.body)
	}))
	t.Cleanup(s.srv.Close)
	host, port, _ := net.SplitHostPort(s.srv.Listener.Addr().String())
	podAddrs.set(ns, pod, net.JoinHostPort(host, port))
	return s
}

// reads is how many times its /sites was read.
func (s *sitesServer) reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// releasesSent is how many POST /drain/release it was sent.
func (s *sitesServer) releasesSent() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.releases
}

// answerReleases makes it answer POST /drain/release with status from now on.
func (s *sitesServer) answerReleases(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseStatus = status
}

func (s *sitesServer) answer(sites ...map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sites == nil {
		sites = []map[string]any{}
	}
	s.body = map[string]any{"sites": sites}
}

// scaledPool is a pool with spec.autoscaling (spec.replicas 1, 100 req/s per pod, up to maxReplicas, the given
// scale-down delay) and two Git sites a and b, both in the index; its server Deployment, created at 1 replica,
// rolled out, and its first pod running, whose /sites the test writes (counts).
type scaledPool struct {
	pool       *v1alpha1.StaticSitePool
	ns, server string // the pool namespace and the server Deployment's name
	a, b       string // the sites' index ids
	s          *sitesServer
	first      *corev1.Pod
}

func newScaledPool(t *testing.T, maxReplicas, scaleDownDelaySeconds int32) *scaledPool {
	t.Helper()
	ctx := context.Background()
	poolNS := namespace(t, uniqueName("pool"))
	tenant := namespace(t, uniqueName("tenant"))
	pool := &v1alpha1.StaticSitePool{ObjectMeta: metav1.ObjectMeta{Name: uniqueName("pool")},
		Spec: v1alpha1.StaticSitePoolSpec{Namespace: poolNS, Namespaces: []string{tenant}, IndexShards: ptr.To[int32](1),
			Replicas: ptr.To[int32](1),
			Autoscaling: &v1alpha1.PoolAutoscalingSpec{MaxReplicas: maxReplicas, TargetRPSPerPod: 100,
				ScaleDownDelaySeconds: ptr.To(scaleDownDelaySeconds)}}}
	testenv.Must(t, k8s.Create(ctx, pool))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pool) })
	gitSite(t, tenant, "a", pool.Name)
	gitSite(t, tenant, "b", pool.Name)
	p := &scaledPool{pool: pool, ns: poolNS, server: poolplacement.ServerName(pool.Name),
		a: poolindex.ID(tenant, "a"), b: poolindex.ID(tenant, "b")}
	testenv.Eventually(t, "both sites in the index", func() error {
		index, err := indexIDs(t, pool)
		if err == nil && len(index) != 2 {
			err = fmt.Errorf("index holds %v", keys(index))
		}
		return err
	})
	d := getDeployment(t, poolNS, p.server)
	if *d.Spec.Replicas != 1 {
		t.Fatalf("a new autoscaled pool has %d replicas, want spec.replicas 1", *d.Spec.Replicas)
	}
	completeRollout(t, d)
	p.first = runPod(t, d, pool.Name+"-1")
	p.s = newSitesServer(t, poolNS, p.first.Name)
	return p
}

// counts is what the first pod's /sites says of the sites' requests.
func (p *scaledPool) counts(na, nb int) {
	p.s.answer(map[string]any{"id": p.a, "state": "memory", "requests": na}, map[string]any{"id": p.b, "state": "memory", "requests": nb})
}

// replicas waits for the server Deployment's replicas.
func (p *scaledPool) replicas(t *testing.T, want int32) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("the server Deployment at %d replicas", want), func() error {
		if got := getDeployment(t, p.ns, p.server); *got.Spec.Replicas != want {
			return fmt.Errorf("replicas %d", *got.Spec.Replicas)
		}
		return nil
	})
}
