//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What the address-family and multi-node scenarios need to know about the cluster they run on, and the node
// operations (drain, stop) they perform. The cluster's shape is stated by `make` (E2E_IP_FAMILIES, E2E_WORKERS)
// and checked here, so a scenario run on the wrong cluster fails instead of proving nothing.

// clusterFamilies are the IP families of the cluster's Services, primary first (the `kubernetes` Service's
// spec.ipFamilies reflects the apiserver's service-cluster-ip-range).
func clusterFamilies(t *testing.T) []corev1.IPFamily {
	t.Helper()
	svc, err := cs.CoreV1().Services("default").Get(ctxFor(t, 30*time.Second), "kubernetes", metav1GetOptions)
	if err != nil {
		t.Fatal(err)
	}
	fams := svc.Spec.IPFamilies
	// The kubernetes Service itself is single-stack on a dual-stack cluster: the pod CIDRs tell the rest.
	nodes, err := cs.CoreV1().Nodes().List(ctxFor(t, 30*time.Second), metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("list nodes: %v", err)
	}
	for _, c := range nodes.Items[0].Spec.PodCIDRs {
		f := familyOf(strings.Split(c, "/")[0])
		if !slices.Contains(fams, f) {
			fams = append(fams, f)
		}
	}
	return fams
}

// requireFamilies fails the test unless the cluster has exactly the families E2E_IP_FAMILIES names
// ("IPv6" or "IPv4,IPv6").
func requireFamilies(t *testing.T) []corev1.IPFamily {
	t.Helper()
	want := os.Getenv("E2E_IP_FAMILIES")
	if want == "" {
		t.Fatal("E2E_IP_FAMILIES is not set: run this test with `make e2e-dual` or `make e2e-ipv6`")
	}
	got := clusterFamilies(t)
	var names []string
	for _, f := range got {
		names = append(names, string(f))
	}
	if strings.Join(names, ",") != want {
		t.Fatalf("the cluster's IP families are %v, want %s: wrong cluster for this test", names, want)
	}
	return got
}

func familyOf(ip string) corev1.IPFamily {
	if strings.Contains(ip, ":") {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

// httpBase is the base URL for an IP and port: net.JoinHostPort brackets an IPv6 literal.
func httpBase(ip string, port int32) string {
	return "http://" + net.JoinHostPort(ip, fmt.Sprint(port))
}

// workers are the schedulable worker nodes (no control-plane role), sorted by name; the test fails unless
// there are at least two.
func workers(t *testing.T) []corev1.Node {
	t.Helper()
	nodes, err := cs.CoreV1().Nodes().List(ctxFor(t, 30*time.Second), metav1.ListOptions{LabelSelector: "!node-role.kubernetes.io/control-plane"})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) < 2 {
		t.Fatalf("%d worker nodes, want at least 2: run this test on the multi-node cluster (`make e2e-dual`)", len(nodes.Items))
	}
	slices.SortFunc(nodes.Items, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return nodes.Items
}

// onControlPlane places a client pod (k6) on the control-plane node, so that draining or stopping a worker never
// takes the load generator with it.
func onControlPlane(p *corev1.PodSpec) {
	p.NodeSelector = map[string]string{"node-role.kubernetes.io/control-plane": ""}
	p.Tolerations = append(p.Tolerations, corev1.Toleration{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
}

// kubectl runs the cluster's kubectl (E2E_KUBECTL, `make kubectl`) against the test's kubeconfig.
func kubectl(t *testing.T, timeout time.Duration, args ...string) (string, error) {
	t.Helper()
	bin := os.Getenv("E2E_KUBECTL")
	if bin == "" {
		t.Fatal("E2E_KUBECTL is not set: run the suite with make")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", cfg.kubeCfg}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// docker runs the docker CLI on the machine that hosts the kind nodes (a node is a container).
func docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// podNodes maps each pod to its node.
func podNodes(pods []corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, p := range pods {
		out[p.Name] = p.Spec.NodeName
	}
	return out
}
