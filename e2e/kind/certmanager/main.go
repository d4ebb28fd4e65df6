// Command cert-manager-controller runs cert-manager's own certificate and issuer controllers (of the release
// go.mod requires) for the operator's tests: envtest's API server (controllers/staticsite, build tag certmanager)
// and, as an image, a kind cluster.
//
// cert-manager's official controller binary is the module github.com/cert-manager/cert-manager/controller-binary
// in the directory cmd/controller of its repository: a module path that does not match its directory, with a
// replace directive, so the Go module proxy has no such module and `go install` cannot build it. The controllers
// themselves are in the main module (pkg/controller), each registering itself by name; this command is the few
// lines of wiring the official binary's app package adds (flags, the shared informers, one goroutine per
// controller), for the controllers a self-signed or CA issuer needs: no ACME, Vault or Venafi, no ingress or
// Gateway shim, no webhook (the CRDs need none: cert-manager.io/v1 only).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"         // the CA issuer type, for the issuer controllers
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned" // the self-signed issuer type
)

// controllers are the ones run, by their registered names: a Certificate's life (trigger, key, request, issuing,
// readiness, old requests pruned), approval of requests for cert-manager.io issuers, the two issuer types, and
// the Issuer and ClusterIssuer status.
var controllers = []string{
	trigger.ControllerName, keymanager.ControllerName, requestmanager.ControllerName, issuing.ControllerName,
	readiness.ControllerName, revisionmanager.ControllerName,
	approver.ControllerName, crselfsigned.CRControllerName, crca.CRControllerName,
	issuers.ControllerName, clusterissuers.ControllerName,
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server (empty: in-cluster)")
	clusterResourceNamespace := flag.String("cluster-resource-namespace", "cert-manager",
		"namespace of the Secrets ClusterIssuers refer to (a CA ClusterIssuer's key pair)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, *clusterResourceNamespace); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager-controller:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, clusterResourceNamespace string) error {
	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig:    kubeconfig,
		IssuerOptions: controller.IssuerOptions{ClusterResourceNamespace: clusterResourceNamespace},
		// cert-manager's defaults: a failed request is retried after an hour, backing off to 32 hours.
		CertificateOptions: controller.CertificateOptions{CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour},
	})
	if err != nil {
		return err
	}
	// Each constructor registers its informers with the shared factories; they start once all are registered,
	// and each controller waits for its informers' caches before its workers run.
	var run []controller.Interface
	for _, name := range controllers {
		build, ok := controller.Known()[name]
		if !ok {
			return fmt.Errorf("controller %q is not registered by this cert-manager release", name)
		}
		c, err := build(factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		run = append(run, c)
	}
	shared, err := factory.Build()
	if err != nil {
		return err
	}
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.SharedInformerFactory.Start(ctx.Done())
	errs := make(chan error, len(run))
	var wg sync.WaitGroup
	for i, c := range run {
		wg.Go(func() {
			if err := c.Run(1, ctx); err != nil {
				errs <- fmt.Errorf("controller %s: %w", controllers[i], err)
			}
		})
	}
	fmt.Fprintf(os.Stderr, "cert-manager-controller: running %v\n", controllers)
	wg.Wait()
	close(errs)
	return <-errs
}
