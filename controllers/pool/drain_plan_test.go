package pool

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/internal/poolplacement"
)

// planDrain's choice: as many pods as exist beyond the wanted count, draining ones first, then unready, then the
// newest; marks come off only when no scale-down is under way.
func TestPlanDrain(t *testing.T) {
	base := time.Date(2026, 12, 4, 6, 0, 0, 0, time.UTC)
	pod := func(name string, age int, ready, draining, terminating bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(base.Add(-time.Duration(age) * time.Minute))}}
		p.Status.Phase = corev1.PodRunning
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
		if draining {
			p.Annotations = map[string]string{poolplacement.AnnotationDraining: base.Format(time.RFC3339)}
		}
		if terminating {
			p.DeletionTimestamp = &metav1.Time{Time: base}
		}
		return p
	}
	names := func(ps []*corev1.Pod) []string {
		out := []string{}
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	for _, c := range []struct {
		name            string
		pods            []corev1.Pod
		current, want   int32
		victims, unmark []string
	}{
		{"hold: nothing to do", []corev1.Pod{pod("a", 9, true, false, false), pod("b", 1, true, false, false)}, 2, 2, []string{}, []string{}},
		{"the newest goes", []corev1.Pod{pod("a", 9, true, false, false), pod("c", 1, true, false, false), pod("b", 5, true, false, false)}, 3, 1, []string{"c", "b"}, []string{}},
		{"unready before newest", []corev1.Pod{pod("a", 9, false, false, false), pod("b", 1, true, false, false)}, 2, 1, []string{"a"}, []string{}},
		{"a choice stays", []corev1.Pod{pod("a", 9, true, true, false), pod("b", 1, true, false, false)}, 2, 1, []string{"a"}, []string{}},
		{"pods never made need no drain", []corev1.Pod{pod("a", 9, true, false, false)}, 3, 2, []string{}, []string{}},
		{"terminating pods count for nothing", []corev1.Pod{pod("a", 9, true, false, false), pod("b", 1, true, true, true)}, 2, 1, []string{}, []string{}},
		{"fewer to remove: a mark comes off", []corev1.Pod{pod("a", 9, true, false, false), pod("b", 5, true, true, false), pod("c", 1, true, true, false)}, 3, 2, []string{"c"}, []string{"b"}},
		{"cancelled: the mark comes off", []corev1.Pod{pod("a", 9, true, false, false), pod("b", 1, true, true, false)}, 2, 2, []string{}, []string{"b"}},
		{"replicas lowered, pod not yet deleted: the mark stays", []corev1.Pod{pod("a", 9, true, false, false), pod("b", 1, true, true, false)}, 1, 1, []string{}, []string{}},
		{"spared by the ReplicaSet controller: the mark comes off", []corev1.Pod{pod("a", 9, true, false, true), pod("b", 1, true, true, false)}, 1, 1, []string{}, []string{"b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan := planDrain(c.pods, c.current, c.want)
			if got := names(plan.victims); !slices.Equal(got, c.victims) {
				t.Errorf("victims %v, want %v", got, c.victims)
			}
			if got := names(plan.unmark); !slices.Equal(got, c.unmark) {
				t.Errorf("unmark %v, want %v", got, c.unmark)
			}
		})
	}
}
