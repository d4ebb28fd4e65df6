package autoscaling

import (
	"k8s.io/apimachinery/pkg/api/equality"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// capacityChanged passes an update of a StaticSite whose status.capacity changed: the StaticSite controller writes
// it through the status subresource, which leaves the generation alone, and a new or no-longer-current measurement
// changes the target of targetUtilization. The autoscaler's own status writes (status.autoscaling, its conditions)
// do not pass, so they do not wake it. Only updates are its business; creations and deletions pass the generation
// predicate it is combined with.
var capacityChanged = predicate.Funcs{
	CreateFunc:  func(ctrlevent.CreateEvent) bool { return false },
	DeleteFunc:  func(ctrlevent.DeleteEvent) bool { return false },
	GenericFunc: func(ctrlevent.GenericEvent) bool { return false },
	UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*v1alpha1.StaticSite)
		after, ok2 := e.ObjectNew.(*v1alpha1.StaticSite)
		if !ok1 || !ok2 {
			return false
		}
		return !equality.Semantic.DeepEqual(before.Status.Capacity, after.Status.Capacity)
	},
}
