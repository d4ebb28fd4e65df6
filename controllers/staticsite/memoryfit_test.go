package staticsite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The content the site serves: five files, four of them 512 KiB of incompressible bytes (the background encoder
// leaves them alone, so the numbers do not move while the test reads them), about 2 MiB in all. Under a 20Mi
// memory limit the server's automatic content budget is under 1 MiB, so most of it is served from disk.
const (
	blobs    = 4
	blobSize = 512 << 10
	index    = "<!doctype html><title>big</title>\n"
)

func writeBigSite(t *testing.T) (root string, bytes int64) {
	t.Helper()
	root = t.TempDir()
	rng := rand.New(rand.NewPCG(20261125, 12)) // fixed: the same site on every run
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(root, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		bytes += int64(len(b))
	}
	write("index.html", []byte(index))
	for i := range blobs {
		b := make([]byte, blobSize)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		write(fmt.Sprintf("blob-%d.bin", i), b)
	}
	return root, bytes
}

// A site that does not fit its memory: status.content shows what the real server reports, ContentInMemory turns
// False with a warning that names the bytes on disk and the memory that would fit, and Ready stays True. Following
// the advice (spec.memory = status.content.fitMemoryLimit) and rolling a pod under that limit makes it True.
func TestContentThatDoesNotFitItsMemory(t *testing.T) {
	ns := namespace(t)
	root, size := writeBigSite(t)
	site := createSite(t, ns, "big", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/big:v1"},
		Memory: ptr.To(resource.MustParse("20Mi"))})
	d := getDeployment(t, ns, "big")
	completeRollout(t, d)
	waitSite(t, ns, "big", "no pod yet", func(s *v1alpha1.StaticSite) error {
		if s.Status.Content != nil {
			return fmt.Errorf("status.content %+v without a pod", s.Status.Content)
		}
		return condition(s, v1alpha1.ConditionContentInMemory, metav1.ConditionUnknown, v1alpha1.ReasonNotMeasured)
	})

	// The pod's server: the container the operator wrote, under the pod's memory limit (20Mi).
	small := startRealServer(t, d, root)
	scraper.serve(ns, "big-a", small.AdminPort())
	serverPod(t, d, "big-a", "127.0.0.1")
	got := waitSite(t, ns, "big", "partly on disk", func(s *v1alpha1.StaticSite) error {
		if err := condition(s, v1alpha1.ConditionContentInMemory, metav1.ConditionFalse, v1alpha1.ReasonPartlyOnDisk); err != nil {
			return err
		}
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)
	})
	c := got.Status.Content
	if c == nil || c.Pod != "big-a" || c.Files != blobs+1 || c.Bytes != size || c.DiskBytes <= 0 || c.DiskBytes >= c.Bytes ||
		c.MemoryLimit == nil || c.MemoryLimit.Cmp(resource.MustParse("20Mi")) != 0 || c.FitMemoryLimit.Cmp(resource.MustParse("20Mi")) <= 0 {
		t.Fatalf("status.content = %+v; want big-a's %d files, %d bytes, some on disk, limit 20Mi and a larger fit\nserver stderr:\n%s",
			c, blobs+1, size, small.Stderr)
	}
	fit := c.FitMemoryLimit.String()
	msg := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionContentInMemory).Message
	for _, want := range []string{fmt.Sprint(c.DiskBytes), "20Mi", fit} {
		if !strings.Contains(msg, want) {
			t.Errorf("ContentInMemory message %q does not say %s", msg, want)
		}
	}
	t.Logf("ContentInMemory=False: %s", msg)
	waitEvent(t, ns, "big", "Warning ContentPartlyOnDisk pod big-a serves "+fmt.Sprint(c.DiskBytes))
	waitEvent(t, ns, "big", "a memory limit of "+fit)

	// The fix the status suggests: the new template's pod runs under the fitting limit, the old one is gone.
	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Memory = ptr.To(c.FitMemoryLimit) })
	testenv.Eventually(t, "template with the new memory", func() error {
		d = getDeployment(t, ns, "big")
		if m := d.Spec.Template.Spec.Containers[0].Resources.Limits.Memory(); m.Cmp(c.FitMemoryLimit) != 0 {
			return fmt.Errorf("template memory %s, want %s", m, fit)
		}
		return nil
	})
	testenv.Must(t, k8s.Delete(context.Background(), podNamed(ns, "big-a")))
	completeRollout(t, d)
	fits := startRealServer(t, d, root)
	scraper.serve(ns, "big-b", fits.AdminPort())
	serverPod(t, d, "big-b", "127.0.0.1")
	got = waitSite(t, ns, "big", "all in memory", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionContentInMemory, metav1.ConditionTrue, v1alpha1.ReasonAllInMemory)
	})
	if c := got.Status.Content; c == nil || c.Pod != "big-b" || c.DiskBytes != 0 || c.MemoryBytes < size {
		t.Errorf("status.content = %+v; want big-b's, none on disk", c)
	}
	waitEvent(t, ns, "big", "Normal ContentInMemory pod big-b serves all 5 files")
	var warnings int
	for _, e := range events(t, ns, "big") {
		if strings.HasPrefix(e, "Warning ContentPartlyOnDisk") {
			warnings++
		}
	}
	if warnings != 1 {
		t.Errorf("%d ContentPartlyOnDisk events, want 1 (the flip, not every pass): %q", warnings, events(t, ns, "big"))
	}
}

func podNamed(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}
