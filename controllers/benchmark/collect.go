package benchmark

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/benchresults"
	"hyperstatic.dev/hyperstatic/internal/k6script"
)

// LogSource reads a finished k6 pod's output. The operator reads pod logs (pods/log); the envtest suite, which
// has no kubelet, feeds recorded k6 runner output for the pods it creates.
type LogSource interface {
	PodLog(ctx context.Context, pod *corev1.Pod) ([]byte, error)
}

// KubeLogs reads pod logs through the API server.
type KubeLogs struct{ Clientset kubernetes.Interface }

// PodLog implements LogSource: the k6 container's whole log (a run prints a few KiB per step).
func (k KubeLogs) PodLog(ctx context.Context, pod *corev1.Pod) ([]byte, error) {
	return k.Clientset.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: ContainerName}).DoRaw(ctx)
}

// jobPods are the pods of the run, by completion index; for an index with several pods (never with backoffLimit
// 0, but a node loss can recreate one) the succeeded pod wins, else the newest.
func (r *Reconciler) jobPods(ctx context.Context, b *v1alpha1.Benchmark) (map[int]*corev1.Pod, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(b.Namespace), client.MatchingLabels{v1alpha1.LabelBenchmark: b.Name}); err != nil {
		return nil, err
	}
	out := map[int]*corev1.Pod{}
	for i := range list.Items {
		p := &list.Items[i]
		idx, err := strconv.Atoi(p.Annotations[batchv1.JobCompletionIndexAnnotation])
		if err != nil {
			continue
		}
		prev, ok := out[idx]
		switch {
		case !ok:
			out[idx] = p
		case prev.Status.Phase != corev1.PodSucceeded && (p.Status.Phase == corev1.PodSucceeded || p.CreationTimestamp.After(prev.CreationTimestamp.Time)):
			out[idx] = p
		}
	}
	return out, nil
}

// collect reads every pod's output and merges it with the server samples.
func (r *Reconciler) collect(ctx context.Context, b *v1alpha1.Benchmark, plan k6script.Plan, target string, samples []benchresults.ServerSample) (benchresults.Results, error) {
	pods, err := r.jobPods(ctx, b)
	if err != nil {
		return benchresults.Results{}, err
	}
	logs := map[int]benchresults.PodLog{}
	var problems []string
	idx := make([]int, 0, len(pods))
	for i := range pods {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		raw, err := r.Logs.PodLog(ctx, pods[i])
		if err != nil {
			problems = append(problems, fmt.Sprintf("pod %s: cannot read its log: %v", pods[i].Name, err))
			continue
		}
		parsed, err := benchresults.ParseLog(raw)
		if err != nil {
			problems = append(problems, fmt.Sprintf("pod %s: %v", pods[i].Name, err))
			continue
		}
		logs[i] = parsed
	}
	th, err := thresholdsOf(b)
	if err != nil {
		return benchresults.Results{}, err
	}
	res := benchresults.Merge(benchresults.Input{Workload: plan.Kind, Target: target, KeepAlive: plan.KeepAlive,
		Parallelism: plan.Parallelism, Steps: plan.Steps, Pods: logs, Server: samples, Thresholds: th})
	res.Warnings = append(problems, res.Warnings...)
	return res, nil
}

func thresholdsOf(b *v1alpha1.Benchmark) (benchresults.Thresholds, error) {
	th := benchresults.Thresholds{MaxErrorRate: -1}
	t := b.Spec.Thresholds
	if t == nil {
		return th, nil
	}
	if t.P99 != nil {
		th.P99Ms = float64(t.P99.Duration.Microseconds()) / 1000
	}
	if t.MaxErrorRate != "" {
		v, err := strconv.ParseFloat(strings.TrimSuffix(t.MaxErrorRate, "%"), 64)
		if err != nil {
			return th, fmt.Errorf("thresholds.maxErrorRate %q: %w", t.MaxErrorRate, err)
		}
		th.MaxErrorRate = v / 100
	}
	return th, nil
}

// resultsData renders the results for the results ConfigMap.
func resultsData(b *v1alpha1.Benchmark, res benchresults.Results) (map[string]string, error) {
	js, err := benchresults.JSON(res)
	if err != nil {
		return nil, err
	}
	csv, err := benchresults.CSV(res)
	if err != nil {
		return nil, err
	}
	title := fmt.Sprintf("Benchmark %s/%s: %s", b.Namespace, b.Name, res.Target)
	return map[string]string{
		benchresults.ResultsJSONKey: string(js),
		benchresults.ResultsCSVKey:  string(csv),
		benchresults.ChartKey:       string(benchresults.SVG(res, title)),
	}, nil
}
