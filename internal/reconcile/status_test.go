package reconcile

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// WriteStatus records transitions only once the write is in: a write that loses to another writer (a conflict)
// records nothing, and an unchanged status is neither written nor recorded. Against a real API server.
func TestWriteStatusRecordsOnlyAfterTheWrite(t *testing.T) {
	env, err := testenv.Start()
	testenv.Must(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	c := env.Client
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "w"},
		Spec: v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/site:v1"}}}
	testenv.Must(t, c.Create(ctx, site))
	stale, fresh := &v1alpha1.StaticSite{}, &v1alpha1.StaticSite{}
	testenv.Must(t, c.Get(ctx, client.ObjectKeyFromObject(site), stale))
	testenv.Must(t, c.Get(ctx, client.ObjectKeyFromObject(site), fresh))

	recorded := 0
	record := func() { recorded++ }
	fresh.Status.URL = "http://first"
	testenv.Must(t, WriteStatus(ctx, c, fresh, true, record))
	if recorded != 1 {
		t.Fatalf("a write that went in recorded %d times, want 1", recorded)
	}
	stale.Status.URL = "http://second"
	if err := WriteStatus(ctx, c, stale, true, record); !apierrors.IsConflict(err) {
		t.Fatalf("a write from a stale read: %v, want a conflict", err)
	}
	if recorded != 1 {
		t.Fatalf("a lost write recorded its transitions")
	}
	testenv.Must(t, WriteStatus(ctx, c, fresh, false, record))
	if recorded != 1 {
		t.Fatalf("an unchanged status recorded its transitions")
	}
}
