package staticsite

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
	"hyperstatic.dev/hyperstatic/internal/gitrevision"
)

// pinPath is the controller of the pin's fast path (gitcontent/pinnow.go holds its contract): a site whose wanted
// pin changed has it sent to its fetcher from a queue of its own, without waiting for the site's pass. It writes
// nothing to the API server; the site's pass, queued by the same change, says what came of it.
type pinPath struct {
	cache  client.Reader
	pins   *gitcontent.PinTargets
	pinner gitrevision.Pinner
}

// setupPinPath registers the fast path beside the StaticSite controller, when the Git reader can pin.
func (r *Reconciler) setupPinPath(mgr ctrl.Manager) error {
	pinner, ok := r.GitReader.(gitrevision.Pinner)
	if !ok {
		return nil
	}
	r.pins = &gitcontent.PinTargets{}
	p := &pinPath{cache: r.Client, pins: r.pins, pinner: pinner}
	return ctrl.NewControllerManagedBy(mgr).
		Named("staticsite-pin").
		For(&v1alpha1.StaticSite{}, builder.WithPredicates(pinChanged)).
		Complete(p)
}

// pinChanged passes a site update whose wanted pin changed (the field or the annotation), nothing else: a new
// operator's first sight of a site has no fetcher remembered, and the site's pass delivers the pin then.
var pinChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, okOld := e.ObjectOld.(*v1alpha1.StaticSite)
		n, okNew := e.ObjectNew.(*v1alpha1.StaticSite)
		if !okOld || !okNew || n.Spec.Content.Git == nil {
			return false
		}
		before, badBefore := "", ""
		if o.Spec.Content.Git != nil {
			before, badBefore = gitcontent.WantedPin(o)
		}
		after, badAfter := gitcontent.WantedPin(n)
		return before != after || badBefore != badAfter
	},
}

// Reconcile sends the site's wanted pin now. Nothing it meets is an error to retry: without a known fetcher, or
// when the send fails, the site's pass delivers the pin as it always did.
func (p *pinPath) Reconcile(ctx context.Context, req ctrlreconcile.Request) (ctrlreconcile.Result, error) {
	site := &v1alpha1.StaticSite{}
	if err := p.cache.Get(ctx, req.NamespacedName, site); err != nil {
		if apierrors.IsNotFound(err) {
			p.pins.Forget(req.NamespacedName)
		}
		return ctrlreconcile.Result{}, nil
	}
	if !site.DeletionTimestamp.IsZero() {
		return ctrlreconcile.Result{}, nil
	}
	err := p.pins.PinNow(ctx, p.cache, p.pinner, site)
	switch {
	case err == nil:
		log.FromContext(ctx).V(1).Info("pin sent by the fast path")
	case errors.Is(err, gitcontent.ErrNoPinTarget), errors.Is(err, gitrevision.ErrNotInHistory):
	default:
		log.FromContext(ctx).Info("the fast path could not send the pin; the site's pass will", "error", err.Error())
	}
	return ctrlreconcile.Result{}, nil
}
