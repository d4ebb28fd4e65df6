package pool

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/internal/poolplacement"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The pods that read the index, the server pods and the fetcher, are told of each index revision in one
// annotation, which makes their kubelet remount the index at once (step_deliver.go): every pod carries the
// revision the shards hold, and the new one after a site joins.
func TestIndexRevisionToldToThePods(t *testing.T) {
	ctx := context.Background()
	poolNS, tenant := namespace(t, uniqueName("pool")), namespace(t, uniqueName("tenant"))
	pool := createPool(t, poolNS, []string{tenant}, 2)
	createConfigMap(t, tenant, "pages", map[string]string{"index.html": "hi"}, nil)
	configMapSite(t, tenant, "alpha", pool.Name, "pages")
	server := getDeployment(t, poolNS, poolplacement.ServerName(pool.Name))
	pods := []*corev1.Pod{runPod(t, server, pool.Name+"-1"), runPod(t, server, pool.Name+"-2"),
		runPod(t, getDeployment(t, poolNS, poolplacement.FetcherName(pool.Name)), pool.Name+"-fetcher-1")}

	told := func(sites int) string {
		t.Helper()
		var rev string
		testenv.Eventually(t, fmt.Sprintf("every pod told of the index of %d sites", sites), func() error {
			index, err := indexIDs(t, pool)
			if err != nil {
				return err
			}
			if len(index) != sites {
				return fmt.Errorf("index holds %d sites", len(index))
			}
			rev = storedIndexRevision(t, pool)
			for _, p := range pods {
				if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
					return err
				}
				if got := p.Annotations[annotationIndexRevision]; got != rev {
					return fmt.Errorf("pod %s told of %q, the shards hold %q", p.Name, got, rev)
				}
			}
			return nil
		})
		return rev
	}
	first := told(1)
	configMapSite(t, tenant, "bravo", pool.Name, "pages")
	if second := told(2); second == first {
		t.Fatalf("the index revision %s did not change with a new site", first)
	}
}

// podsBehind: the pods not terminating whose annotation names another revision, or none; a pod told the revision
// again (step_retell.go) is not behind.
func TestPodsBehind(t *testing.T) {
	pod := func(name, told string, terminating bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if told != "" {
			p.Annotations = map[string]string{annotationIndexRevision: told}
		}
		if terminating {
			now := metav1.Now()
			p.DeletionTimestamp = &now
		}
		return p
	}
	pods := []corev1.Pod{pod("new", "", false), pod("old", "r1", false), pod("current", "r2", false), pod("leaving", "r1", true),
		pod("retold", "r2/2", false), pod("retold-old", "r1/3", false)}
	var got []string
	for _, p := range podsBehind(pods, "r2") {
		got = append(got, p.Name)
	}
	if want := []string{"new", "old", "retold-old"}; !slices.Equal(got, want) {
		t.Errorf("podsBehind = %v, want %v", got, want)
	}
}
