package staticsite

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/managercache"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The CRD watches of optionalcrds.go. TestCertificateWithoutCertManager sees the whole story on the running
// controller, but there the site (spec.tls) is also retried every TLSRecheck, so it cannot tell the watch's wake-up
// from a retry. Here the controller's watch of cert-manager's Certificate CRD (its own cache, its own handler) is
// started on a queue of the test's own, which nothing else fills.

// Installing cert-manager's Certificate CRD queues the sites whose spec.tls.issuerRef needs it, without delay and
// at the priority of a change, not handler.LowPriority: in the controller's priority queue such a request goes
// before every periodic retry that fell due, which is what a site waiting for the CRD used to wait behind
// (issue 43). A site that names its own Secret needs no Certificate and is not mapped.
func TestCertificateCRDWatchQueuesTheSitesThatNeedIt(t *testing.T) {
	crd, err := testenv.CertificateCRD()
	testenv.Must(t, err)
	env.UninstallCRD(t, crd)
	t.Cleanup(func() { env.UninstallCRD(t, crd) })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	ns := namespace(t)
	issuerSite(t, ns, "waits", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/waits:v1"},
		Hostnames: []v1alpha1.Hostname{v1alpha1.Hostname("waits." + ns + ".example.com")},
		TLS:       &v1alpha1.TLSSpec{IssuerRef: &v1alpha1.IssuerReference{Name: "team-ca"}}})
	createSite(t, ns, "own", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/own:v1"},
		TLS: &v1alpha1.TLSSpec{SecretName: "own-tls"}})
	// Both had a pass, so the manager's cache, which the watch maps through, holds them.
	waitSite(t, ns, "waits", "CertificateReady False CertManagerNotInstalled", certificateReady(metav1.ConditionFalse,
		v1alpha1.ReasonCertManagerNotInstalled, ""))
	waitSite(t, ns, "own", "TLSReady False SecretNotFound", conditionWith(v1alpha1.ConditionTLSReady, metav1.ConditionFalse,
		v1alpha1.ReasonSecretNotFound, ""))

	crdMeta := managercache.CRDMetadata()
	crdMeta.SetName(certificateCRD)
	mapped := suiteReconciler.sitesUsing(indexOptionalCRD)(ctx, crdMeta)
	if !hasRequest(mapped, ns, "waits") || hasRequest(mapped, ns, "own") {
		t.Errorf("the CRD maps to %v: want %s/waits and not %s/own", mapped, ns, ns)
	}

	crds := suiteReconciler.crdCaches[certificateCRD]
	testenv.Eventually(t, "the CRD gone from the controller's cache", func() error {
		return testenv.Gone(crds.Get(ctx, client.ObjectKey{Name: certificateCRD}, managercache.CRDMetadata()))
	})
	q := priorityqueue.New[reconcile.Request]("certificate-crd-watch-test")
	t.Cleanup(q.ShutDown)
	w := suiteReconciler.crdWatch(crds)
	testenv.Must(t, w.Start(ctx, q))
	testenv.Must(t, w.(source.SyncingSource).WaitForSync(ctx))
	if n := q.Len(); n != 0 {
		t.Fatalf("%d requests queued with no CRD installed", n)
	}

	env.InstallCRD(t, crd)
	waitQueued(t, q, ns, "waits")
}

func hasRequest(reqs []reconcile.Request, ns, name string) bool {
	for _, r := range reqs {
		if r.Namespace == ns && r.Name == name {
			return true
		}
	}
	return false
}

// waitQueued takes requests from q until one for ns/name was queued at a priority above handler.LowPriority.
func waitQueued(t *testing.T, q priorityqueue.PriorityQueue[reconcile.Request], ns, name string) {
	t.Helper()
	taken := 0
	testenv.Eventually(t, fmt.Sprintf("%s/%s queued", ns, name), func() error {
		for q.Len() > 0 {
			req, priority, _ := q.GetWithPriority()
			q.Done(req)
			if req.Namespace == ns && req.Name == name && priority > handler.LowPriority {
				return nil
			}
			taken++
		}
		return fmt.Errorf("not queued; %d other requests taken", taken)
	})
}
