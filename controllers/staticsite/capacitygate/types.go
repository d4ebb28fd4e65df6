package capacitygate

// The step's input and output, and the reconciler as the step reads and writes through it.

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// Step is what the capacity step and the gate read and write through, given by the StaticSite reconciler.
type Step struct {
	// Client reads through the manager's cache and creates and deletes the measurement's children.
	Client client.Client
	// Direct reads around the cache: the site as it is now, before a child is created.
	Direct client.Reader
	// ConflictRetry is how soon a pass that read an outdated site runs again.
	ConflictRetry time.Duration
}

// Content names the content a template serves: the current content's roll hash and revision.
type Content struct{ RollHash, Revision string }

// Pass is the site as the capacity step sees it in one pass: what the earlier steps found.
type Pass struct {
	Site *v1alpha1.StaticSite
	// Now is the pass's one clock reading.
	Now     time.Time
	Content Content
	// Deployment is the site's Deployment as this pass's apply left it (nil: none).
	Deployment *appsv1.Deployment
	// Pods are the site's pods that are not terminating.
	Pods []corev1.Pod
	// Gate is what Hold saw (nil: gate off, or no Deployment yet).
	Gate *View
	// Rollout is whether the Deployment's rollout is complete, and if not what it waits for.
	Rollout Rollout
}

// Rollout is the state of the site's Deployment rollout: a measurement starts only once it is done.
type Rollout struct {
	Done    bool
	Message string
}

// pass is one run of the step: its input, what it decided, and the soonest it asked to run again.
type pass struct {
	Pass
	cs           State
	requeueAfter time.Duration
}

func (st *pass) requeue(d time.Duration) {
	if st.requeueAfter == 0 || d < st.requeueAfter {
		st.requeueAfter = d
	}
}

// View is what Hold learned for the gate: the live (serving) and desired templates' identities, and whether the
// desired one was held back or let through by the override.
type View struct {
	serving, desired v1alpha1.TemplateIdentity
	desiredTemplate  corev1.PodTemplateSpec
	held             bool // the Deployment kept its live template
	overridden       bool // the override annotation names the desired template, which rolls out
}

// State is what the capacity step measured and decided in a pass: package staticsite's deriveStatus puts it
// into the status, and the events and deletions wait for the status write.
type State struct {
	Wanted bool                            // a measurement is wanted at all (else status.capacity and the gate go)
	Status *v1alpha1.CapacityStatus        // status.capacity
	Gate   *v1alpha1.PerformanceGateStatus // status.performanceGate (nil: gate off, or no candidate yet)
	// Measured is the CapacityMeasured condition (Type empty: none yet).
	Measured metav1.Condition
	// MeasuringCanary is the Reconciling message while a canary is measured.
	MeasuringCanary string
	// Events are recorded once the status is written.
	Events []Event
	// Cleanup: the children of a measurement whose result is in the status, deleted once the status is written.
	Cleanup []client.Object
}

// Event is an event of the pass's capacity results, recorded on the site once the status is written.
type Event struct{ Type, Reason, Message string }

func (c *State) event(typ, reason, format string, args ...any) {
	c.Events = append(c.Events, Event{Type: typ, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

// measurementJob is the one measurement a site runs at a time.
type measurementJob struct {
	role       string // RoleProbe (the serving template) or RoleCanary (the gate's candidate)
	identity   v1alpha1.TemplateIdentity
	template   corev1.PodTemplateSpec
	servingPod string // spec.capacity.target ServingPod: the serving pod loaded ("": a pod of its own)
	request    string // the measure-capacity annotation answered
}
