package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// kwokNodeAnnotation marks the nodes kwok manages (and only those: --manage-nodes-with-annotation-selector).
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// cluster is the control plane the operator runs against: envtest's kube-apiserver and etcd, a
// kube-controller-manager (Deployments → ReplicaSets → pods), a kube-scheduler (pods → nodes) and kwok (fake
// nodes that report pods Running and Ready with an IP from a machine-local CIDR, machinelocal.go).
type cluster struct {
	env        *envtest.Environment
	kubeconfig string // path of an admin kubeconfig
	clientset  *kubernetes.Clientset
}

// startControlPlane starts etcd and kube-apiserver with the CRDs installed and writes an admin kubeconfig.
func startControlPlane(cfg *config, workDir string) (*cluster, error) {
	env := &envtest.Environment{
		BinaryAssetsDirectory: cfg.assets,
		CRDDirectoryPaths:     []string{filepath.Join(cfg.repo, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	apiserver := env.ControlPlane.GetAPIServer().Configure()
	// Room for every Service (one per site) and for the controllers' bursts at start.
	apiserver.Set("service-cluster-ip-range", "10.0.0.0/16")
	apiserver.Set("max-requests-inflight", "1000")
	apiserver.Set("max-mutating-requests-inflight", "500")
	if cfg.local.isolated {
		// In the harness' own network namespace (netns.sh) there is no default route, from which kube-apiserver
		// picks the address it advertises (the kubernetes Service's endpoint); without one it does not start. The
		// node IP is proven local there; nothing here uses that endpoint (every client has the kubeconfig).
		apiserver.Set("advertise-address", cfg.nodeIP)
	}
	restCfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start envtest (kube-apiserver, etcd from %s): %w", cfg.assets, err)
	}
	c := &cluster{env: env}
	user, err := env.AddUser(envtest.User{Name: "bench-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	c.kubeconfig = filepath.Join(workDir, "kubeconfig")
	if err := os.WriteFile(c.kubeconfig, kc, 0o600); err != nil {
		_ = env.Stop()
		return nil, err
	}
	restCfg.QPS, restCfg.Burst = 200, 400
	if c.clientset, err = kubernetes.NewForConfig(restCfg); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return c, nil
}

// startComponents starts kube-controller-manager, kube-scheduler and kwok.
func (c *cluster) startComponents(cfg *config, ps *procs, workDir string) error {
	// Only the controllers the benchmark needs: no node lifecycle (kwok's nodes must not be tainted or
	// evicted), no garbage collector or namespace controller (nothing is deleted while measuring).
	if _, err := ps.start("kube-controller-manager", filepath.Join(cfg.k8sBin, "kube-controller-manager"),
		"--kubeconfig="+c.kubeconfig,
		"--controllers=deployment,replicaset",
		"--leader-elect=false",
		"--secure-port=0",
		"--kube-api-qps=500", "--kube-api-burst=1000",
		"--concurrent-deployment-syncs=20", "--concurrent-replicaset-syncs=20",
	); err != nil {
		return err
	}
	schedCfg := filepath.Join(workDir, "scheduler.yaml")
	if err := os.WriteFile(schedCfg, []byte(fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: %q, qps: 500, burst: 1000}
leaderElection: {leaderElect: false}
`, c.kubeconfig)), 0o600); err != nil {
		return err
	}
	if _, err := ps.start("kube-scheduler", filepath.Join(cfg.k8sBin, "kube-scheduler"),
		"--config="+schedCfg, "--secure-port=0"); err != nil {
		return err
	}
	// kwok: pod IPs from a machine-local CIDR (loopback, or local in the harness' network namespace), so every
	// scrape of a pod IP by the operator reaches this machine (the responder listens on 0.0.0.0); the nodes' own
	// address is machine-local too. Its stages are the
	// "fast" ones its module ships (nodes Ready at once, pods Running and Ready once bound).
	// Flags, not a KwokConfiguration file: kwok applies its defaults (stage parallelism, ...) only to the
	// configuration it makes itself when no file holds one.
	args := []string{"--kubeconfig=" + c.kubeconfig, "--cidr=" + cfg.podCIDR, "--node-ip=" + cfg.nodeIP,
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
		"--server-address="}
	for _, s := range []string{"node/fast/node-initialize.yaml", "pod/fast/pod-ready.yaml", "pod/fast/pod-complete.yaml", "pod/fast/pod-delete.yaml"} {
		args = append(args, "--config="+filepath.Join(cfg.kwokStages, s))
	}
	_, err := ps.start("kwok", cfg.kwok, args...)
	return err
}

// createNodes creates n fake nodes for kwok and waits until every one is Ready.
func (c *cluster) createNodes(ctx context.Context, n int) error {
	for i := range n {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        fmt.Sprintf("kwok-node-%03d", i),
				Annotations: map[string]string{kwokNodeAnnotation: "fake"},
				Labels:      map[string]string{"type": "kwok", corev1.LabelHostname: fmt.Sprintf("kwok-node-%03d", i)},
			},
		}
		// No capacity here: kwok's node-initialize stage fills in a large one (1k CPUs, 1 Mi pods).
		if _, err := c.clientset.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", node.Name, err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		nodes, err := c.clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, nd := range nodes.Items {
			for _, cond := range nd.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == n, nil
	})
	if err != nil {
		return fmt.Errorf("wait for kwok to make the nodes Ready: %w", err)
	}
	// The API server's admission taints a new node not-ready; the node lifecycle controller, which would lift
	// the taint, is not run (it would also evict, which nothing here should do): lift it here.
	for i := range n {
		node, err := c.clientset.CoreV1().Nodes().Get(ctx, fmt.Sprintf("kwok-node-%03d", i), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(node.Spec.Taints) == 0 {
			continue
		}
		node.Spec.Taints = nil
		if _, err := c.clientset.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("untaint node %s: %w", node.Name, err)
		}
	}
	return nil
}

// startResponder runs the real hyperstatic-server (serving the dedicated sites' site value, siteFile) with its admin port (the one the operator scrapes) on adminAddr:
// 0.0.0.0:v1alpha1.AdminPort, which every machine-local address kwok gives a pod reaches, or, with a pool, a loopback
// port behind the admin proxy (poolserve.go), which owns 0.0.0.0:v1alpha1.AdminPort then.
func startResponder(ctx context.Context, cfg *config, ps *procs, adminAddr, siteFile string) (*child, error) {
	httpAddr, err := freeLoopbackAddr() // the server's content listener, loopback only
	if err != nil {
		return nil, err
	}
	srv, err := ps.start("hyperstatic-server", cfg.serverBin, "--root", cfg.siteRoot, "--site", siteFile, "--listen", httpAddr, "--admin-listen", adminAddr)
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(adminAddr)
	url := "http://127.0.0.1:" + port + "/metrics"
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if srv.exited() {
			return false, fmt.Errorf("the server exited (port %s taken?): see hyperstatic-server.log", port)
		}
		return httpOK(ctx, url) == nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("wait for the server's admin port: %w", err)
	}
	return srv, nil
}

// httpOK GETs url and fails unless it answers 200.
func httpOK(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return nil
}

// preflight proves, before the operator runs, that kwok gives pods machine-local IPs (local) and that the server
// answers the operator's scrape on such an IP: a pod is bound to a fake node directly, its IP checked and scraped.
func (c *cluster) preflight(ctx context.Context, local machineLocal) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench-preflight"}}
	if _, err := c.clientset.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "machine-local-check", Namespace: ns.Name},
		Spec: corev1.PodSpec{
			NodeName:   "kwok-node-000",
			Containers: []corev1.Container{{Name: "c", Image: "fake"}},
		},
	}
	if _, err := c.clientset.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	var ip string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := c.clientset.CoreV1().Pods(ns.Name).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		ip = p.Status.PodIP
		return ip != "", nil
	})
	if err != nil {
		return "", fmt.Errorf("kwok gave the preflight pod no IP: %w", err)
	}
	if !local.contains(ip) {
		return ip, fmt.Errorf("kwok gave a pod the IP %s, which is not machine-local (%s): refusing to run the operator, whose scrapes would leave the machine", ip, local)
	}
	if err := httpOK(ctx, "http://"+net.JoinHostPort(ip, strconv.Itoa(v1alpha1.AdminPort))+"/metrics"); err != nil {
		return ip, fmt.Errorf("the server does not answer on the pod IP %s: %w", ip, err)
	}
	zero := int64(0)
	return ip, c.clientset.CoreV1().Pods(ns.Name).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
}
