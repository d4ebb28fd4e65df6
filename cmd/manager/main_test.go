package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

func TestFlagDefaults(t *testing.T) {
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	o := bindFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if o.serverImage != "hyperstatic/server:"+version || o.leaderElect || o.probeAddr != ":8081" || o.metricsAddr != ":8080" {
		t.Errorf("defaults %+v", o)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// The real manager against a real API server: it becomes ready, takes the leader Lease, reconciles a StaticSite
// with the --server-image it was given, and stops cleanly.
func TestManagerRuns(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	probe, metrics := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, env.Config, &options{metricsAddr: metrics, probeAddr: probe, leaderElect: true,
			leaderElectNS: "default", serverImage: "hyperstatic/server:under-test"})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with %v", err)
		}
	}()

	within := func(what string, check func() error) {
		t.Helper()
		var err error
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if err = check(); err == nil {
				return
			}
		}
		t.Fatalf("%s: %v", what, err)
	}
	get := func(url string) error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
		}
		return nil
	}
	within("readyz", func() error { return get("http://" + probe + "/readyz") })
	within("metrics", func() error { return get("http://" + metrics + "/metrics") })
	c := env.Client
	within("leader lease", func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "operator.hyperstatic.dev"}, &coordinationv1.Lease{})
	})

	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "smoke"},
		Spec: v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "smoke"}}}}}
	if err := c.Create(ctx, site); err != nil {
		t.Fatal(err)
	}
	within("Deployment with the flag's image", func() error {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(site), d); err != nil {
			return err
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "hyperstatic/server:under-test" {
			return fmt.Errorf("image %s", img)
		}
		return nil
	})

	// The manager caches only objects labelled as the operator's own (ownedObjectsOnly): what it creates must
	// carry that label, or it would never see its own children change. Deleting the Service must bring it back.
	svc := &corev1.Service{}
	within("Service created", func() error { return c.Get(ctx, client.ObjectKeyFromObject(site), svc) })
	if err := c.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	within("Service recreated after deletion", func() error {
		fresh := &corev1.Service{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(site), fresh); err != nil {
			return err
		}
		if fresh.UID == svc.UID {
			return fmt.Errorf("still the deleted Service")
		}
		return nil
	})
}

// The cache filter keeps the operator's own objects and drops everybody else's.
func TestCacheKeepsOnlyOwnedObjects(t *testing.T) {
	own := labels.Set{v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue}
	for obj, by := range ownedObjectsOnly() {
		if !by.Label.Matches(own) {
			t.Errorf("%T: the operator's own objects would not be cached", obj)
		}
		if by.Label.Matches(labels.Set{"app": "someone-else"}) {
			t.Errorf("%T: other objects would be cached", obj)
		}
	}
}
