//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"

	"hyperstatic.dev/hyperstatic/internal/gittestserver"
)

// manyPydocsPreviews (end of 14g, with E2E_MANY_PREVIEWS=1): issue 41's "20 previews of the docs site at once, each
// byte-exact, with the pods' memory". Opt-in: its every-file check reads 2.7 GB from the docs' pods in about 25 s, a
// load burst scenario 14's declared load does not cover. (In the one local CI run with it on, 2026-12-04, scenario
// 13a failed its capacity measurement after this check had ended, beside scenario 20's autoscaling step: the cause
// is not shown, and both stay opt-in until the suite declares their load.) gitManyPreviews pull requests are opened one after the other (2 to 21, each
// the docs with one page of its own), then: every pod serves each one's page under its host and status.previews
// lists them all ready (MEASURED: from the first push); one fetch pod per server pod reads every file of every
// preview and of production (21 × 1,065 files per pod) and compares each with its commit's bytes (fetch -tree);
// each pod's memory is logged (the server's own RSS before and after, and the kubelet's working set per container:
// MEASURED), no container restarted, and the server's RSS is under its memory limit. All are closed then, and the step
// waits until status.previews is empty and their hosts answer 404 on every pod.
func manyPydocsPreviews(t *testing.T, srv *gitServer, ns string, repo *gitRepo, hook *webhook, pp *podPages, page siteFile) {
	t.Helper()
	main := repo.trees["main"]
	restarts := containerRestarts(t, pp.pods)
	before := map[string]string{}
	for _, p := range pp.pods {
		before[p.Name] = serverRSS(t, &p)
	}
	start := time.Now()
	want := map[string]siteFile{} // host -> its changed page
	commits := map[int]plumbing.Hash{}
	for n := 2; n < 2+gitManyPreviews; n++ {
		files := maps.Clone(main)
		mine := siteFile{page.path, append([]byte(main[strings.TrimPrefix(page.path, "/")].Data), fmt.Sprintf("\n<!-- pull request %d -->\n", n)...)}
		files[strings.TrimPrefix(page.path, "/")] = gittestserver.Regular(string(mine.data))
		branch := "pr-" + strconv.Itoa(n)
		commit, _ := repo.push(t, branch, "pull request "+strconv.Itoa(n), files)
		deliverPull(t, srv, repo.name, hook, gittestserver.Opened, n, commit, branch)
		want[pydocsPreviewHost(n)] = mine
		commits[n] = commit
	}
	opened := time.Since(start)
	eventually(t, 10*time.Minute, fmt.Sprintf("%d docs previews served by every pod", gitManyPreviews), func(ctx context.Context) (bool, string, error) {
		served := 0
		for _, p := range pp.pods {
			for host, f := range want {
				if code, body := pp.getAs(ctx, p.Name, host, f.path); code == http.StatusOK && string(body) == string(f.data) {
					served++
				}
			}
		}
		s := getSite(t, ns, "pydocs")
		ready := 0
		for _, p := range s.Status.Previews {
			if p.Ready {
				ready++
			}
		}
		done := served == len(want)*len(pp.pods) && ready == gitManyPreviews && len(s.Status.Previews) == gitManyPreviews
		return done, fmt.Sprintf("%d of %d (pod, preview) pairs serve the preview's page; %d of %d previews ready in status",
			served, len(want)*len(pp.pods), ready, len(s.Status.Previews)), nil
	})
	t.Logf("MEASURED pydocs %d pull requests opened one after the other in %.1f s -> every preview's page served by every pod and all ready in status: %.1f s after the first push",
		gitManyPreviews, opened.Seconds(), time.Since(start).Seconds())

	checkPydocsTrees(t, ns, pp.pods, main, want)
	for _, p := range pp.pods {
		t.Logf("MEASURED pydocs memory of pod %s with production and %d previews, every file of each read: server RSS %s (production alone: %s); kubelet working set %s",
			p.Name, gitManyPreviews, serverRSS(t, &p), before[p.Name], podMemory(t, &p))
	}
	if now := containerRestarts(t, pp.pods); !maps.Equal(now, restarts) {
		t.Errorf("containers restarted during the previews: before %v, after %v", restarts, now)
	}
	t.Logf("MEASURED pydocs fetcher with %d previews (kubelet working set): %s", gitManyPreviews, podMemory(t, fetcherPod(t, ns, "pydocs")))

	closed := time.Now()
	for n := 2; n < 2+gitManyPreviews; n++ {
		deliverPull(t, srv, repo.name, hook, gittestserver.Closed, n, commits[n], "pr-"+strconv.Itoa(n))
	}
	waitPreviewsGone(t, pp, ns, "pydocs", sortedKeys(want), page.path, 3*time.Minute)
	t.Logf("pydocs: %d previews closed, all 404 on every pod and status.previews empty %.1f s after the first close", gitManyPreviews, time.Since(closed).Seconds())
}

// pydocsPreviewHost is pull request n's preview hostname of the docs site.
func pydocsPreviewHost(n int) string {
	return fmt.Sprintf("pr-%d--pydocs.%s", n, gitPydocsPreviewsDomain)
}

// checkPydocsTrees runs one fetch pod per server pod (fetch -tree, e2e/cmd/fetch/tree.go) that reads every file of
// production (by the Service's name) and of each preview in want (production's tree but its changed page) from
// that pod, and fails the test on any file whose bytes are not its commit's.
func checkPydocsTrees(t *testing.T, ns string, pods []corev1.Pod, tree map[string]gittestserver.File, want map[string]siteFile) {
	t.Helper()
	files := servedFiles(tree)
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	var lines strings.Builder
	for _, f := range files {
		fmt.Fprintf(&lines, "%x %d %s\n", sha256.Sum256(f.data), len(f.data), f.path)
	}
	hosts := append([]string{"pydocs." + ns + ".svc"}, sortedKeys(want)...)
	started := time.Now()
	for i := range pods {
		addr := net.JoinHostPort(pods[i].Status.PodIP, strconv.Itoa(v1alpha1.ServerPort))
		args := []string{"-tree", lines.String()}
		for _, h := range hosts {
			arg := "http://" + h + " @" + addr
			if f, ok := want[h]; ok {
				arg += fmt.Sprintf(" %s=%x:%d", f.path, sha256.Sum256(f.data), len(f.data))
			}
			args = append(args, arg)
		}
		job := fmt.Sprintf("fetch-trees-%d", i)
		runJob(t, ns, job, corev1.PodSpec{Containers: []corev1.Container{restrictedContainer("fetch", cfg.fetchImage, args...)}}, 8*time.Minute)
		ok, log := waitJob(t, ns, job, 9*time.Minute)
		checked := 0
		for _, line := range strings.Split(log, "\n") {
			var r struct {
				Base       string   `json:"base"`
				Files      int      `json:"files"`
				Bytes      int64    `json:"bytes"`
				Mismatched int      `json:"mismatched"`
				Mismatches []string `json:"mismatches"`
				Error      string   `json:"error"`
			}
			if json.Unmarshal([]byte(line), &r) != nil || r.Base == "" {
				continue
			}
			checked++
			if r.Error != "" || r.Mismatched != 0 || r.Files != len(files) {
				t.Errorf("pod %s, %s: %d files read (want %d), %d not the commit's bytes %v %s", pods[i].Name, r.Base, r.Files, len(files), r.Mismatched, r.Mismatches, r.Error)
			}
		}
		if !ok || checked != len(hosts) {
			t.Errorf("fetch job %s: succeeded %v, %d results for %d hosts", job, ok, checked, len(hosts))
		}
	}
	t.Logf("MEASURED pydocs every file of production and %d previews (%d files each) read from each of %d pods, the exact bytes: %.1f s",
		len(want), len(files), len(pods), time.Since(started).Seconds())
}

// serverRSS is the server's resident memory by its own metric (process_resident_memory_bytes), e.g. "149.0 MiB";
// the test fails if it is at the server container's memory limit (what the kubelet would kill it for).
func serverRSS(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	s, err := scrapePod(ctxFor(t, 30*time.Second), pod)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	for _, c := range pod.Spec.Containers {
		if limit := c.Resources.Limits.Memory(); c.Name == "server" && limit.Value() > 0 && s.ResidentBytes >= float64(limit.Value()) {
			t.Errorf("pod %s: the server's RSS %.1f MiB is at its memory limit %s", pod.Name, s.ResidentBytes/(1<<20), limit)
		}
	}
	return fmt.Sprintf("%.1f MiB", s.ResidentBytes/(1<<20))
}

// waitPreviewsGone waits until every host answers 404 for path on every pod and the site's status.previews is
// empty (closed pull requests: their trees are gone from the pods and from status).
func waitPreviewsGone(t *testing.T, pp *podPages, ns, site string, hosts []string, path string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, fmt.Sprintf("%d closed previews of %s gone", len(hosts), site), func(ctx context.Context) (bool, string, error) {
		for _, p := range pp.pods {
			for _, h := range hosts {
				if code, _ := pp.getAs(ctx, p.Name, h, path); code != http.StatusNotFound {
					return false, fmt.Sprintf("pod %s, %s: %d", p.Name, h, code), nil
				}
			}
		}
		s := getSite(t, ns, site)
		return len(s.Status.Previews) == 0, fmt.Sprintf("status.previews %+v", s.Status.Previews), nil
	})
}

// containerRestarts is each pod's containers' restart counts ("pod/container" -> count).
func containerRestarts(t *testing.T, pods []corev1.Pod) map[string]int32 {
	t.Helper()
	out := map[string]int32{}
	for i := range pods {
		p := &corev1.Pod{}
		if err := k8s.Get(ctxFor(t, 30*time.Second), client.ObjectKeyFromObject(&pods[i]), p); err != nil {
			t.Fatalf("read pod %s: %v", pods[i].Name, err)
		}
		for _, c := range p.Status.ContainerStatuses {
			out[p.Name+"/"+c.Name] = c.RestartCount
		}
	}
	return out
}

// sortedKeys is m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
