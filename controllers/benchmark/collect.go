package benchmark

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/benchresults"
	"hyperstatic.dev/hyperstatic/internal/k6script"
)

// LogSource reads a finished k6 pod's output: at least its last result block (benchresults.ParseLog), at most
// maxLogBytes. The operator reads pod logs (pods/log); the envtest suite, which has no kubelet, feeds recorded k6
// runner output for the pods it creates.
type LogSource interface {
	PodLog(ctx context.Context, pod *corev1.Pod) ([]byte, error)
}

// Bounds of a pod log read. The runner prints its result block last, so the tail holds it: a sweep's largest
// block (200 steps of a few KiB) is under 1 MiB and 210 lines, and the runner keeps what it prints before it to
// 16 KiB of k6 output and one progress line per step. The bounds leave that room several times over while keeping
// a log that is not our runner's (spec.image), or that k6 flooded, from exhausting the operator's memory: a block
// they cut is reported as "results missing or truncated", never parsed as fewer steps.
const (
	maxLogBytes = 8 << 20
	maxLogLines = 20000
	// DefaultResultBytes bounds the result blocks of all the pods of a run together, and so the memory their parsed
	// form takes at once (a few times the text at most: a JSON number of one digit and its comma become 8 bytes):
	// whatever a pod prints, and however many pods a run has, collecting never takes the operator near its memory
	// limit. A run over it fails with ResultsTooLarge; the runner's blocks are far smaller (a 200-step sweep's is
	// under 1 MiB per pod; the default tenancy policy allows 4 pods). Reconciler.ResultBytes overrides it (tests).
	DefaultResultBytes = 8 << 20
)

// sizeText writes a byte count as whole MiB when it is one, else KiB.
func sizeText(n int) string {
	if n%(1<<20) == 0 {
		return strconv.Itoa(n>>20) + " MiB"
	}
	return strconv.Itoa(n>>10) + " KiB"
}

// KubeLogs reads pod logs through the API server.
type KubeLogs struct{ Clientset kubernetes.Interface }

// PodLog implements LogSource: the k6 container's last maxLogLines lines, at most maxLogBytes of them. The kubelet
// applies the bounds; the read enforces the byte bound again itself (a stream read up to it), so no answer,
// whatever its size, is held whole.
func (k KubeLogs) PodLog(ctx context.Context, pod *corev1.Pod) ([]byte, error) {
	rc, err := k.Clientset.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, podLogOptions()).Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, maxLogBytes))
}

func podLogOptions() *corev1.PodLogOptions {
	return &corev1.PodLogOptions{Container: ContainerName, TailLines: ptr.To(int64(maxLogLines)), LimitBytes: ptr.To(int64(maxLogBytes))}
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

// mergeRun reads every pod's output and merges it with the server samples. A pod whose output cannot be read or
// parsed becomes a warning: the results say which pods reported nothing. unread counts the pods whose result block
// was missing or cut (benchresults.ErrResultsIncomplete) of the pods found.
//
// The pods are read one at a time, each log dropped once parsed, and the result blocks together may hold at most
// the result bytes budget (resultBytes): past it the pods left are not parsed and tooLarge says so.
func (r *Reconciler) mergeRun(ctx context.Context, b *v1alpha1.Benchmark, plan k6script.Plan, samples []benchresults.ServerSample) (res benchresults.Results, unread, found int, tooLarge *problem, err error) {
	pods, err := r.jobPods(ctx, b)
	if err != nil {
		return benchresults.Results{}, 0, 0, nil, err
	}
	blockBytes := 0
	logs := map[int]benchresults.PodLog{}
	var problems []string
	idx := make([]int, 0, len(pods))
	for i := range pods {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		if tooLarge != nil {
			problems = append(problems, fmt.Sprintf("pod %s: not read: the results of the pods before it used the whole budget", pods[i].Name))
			continue
		}
		raw, err := r.Logs.PodLog(ctx, pods[i])
		if err != nil {
			problems = append(problems, fmt.Sprintf("pod %s: cannot read its log: %v", pods[i].Name, err))
			continue
		}
		if len(raw) > maxLogBytes { // a LogSource that does not bound its answer: its tail holds the block
			raw = raw[len(raw)-maxLogBytes:]
		}
		if blockBytes += benchresults.BlockSize(raw); blockBytes > r.tunables().resultBytes {
			tooLarge = failWith(v1alpha1.BenchmarkReasonResultsTooLarge,
				"the result blocks of the k6 pods pass the operator's budget of %s at pod %s: use fewer pods or steps", sizeText(r.tunables().resultBytes), pods[i].Name)
			problems = append(problems, fmt.Sprintf("pod %s: not parsed: %s", pods[i].Name, tooLarge.Message))
			continue
		}
		parsed, err := benchresults.ParseLog(raw)
		if errors.Is(err, benchresults.ErrResultsIncomplete) {
			unread++
			problems = append(problems, fmt.Sprintf("pod %s: %v (read %d bytes of the log's tail, at most %d lines and %d MiB)",
				pods[i].Name, err, len(raw), maxLogLines, maxLogBytes>>20))
			continue
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("pod %s: %v", pods[i].Name, err))
			continue
		}
		logs[i] = parsed
	}
	th, err := thresholdsOf(b)
	if err != nil {
		return benchresults.Results{}, 0, 0, nil, err
	}
	res = benchresults.Merge(benchresults.Input{Workload: plan.Kind, Target: plan.BaseURL, KeepAlive: plan.KeepAlive,
		Parallelism: plan.Parallelism, Steps: plan.Steps, Pods: logs, Server: samples, Thresholds: th, Protocol: string(plan.Protocol)})
	res.Warnings = append(problems, res.Warnings...)
	return res, unread, len(pods), tooLarge, nil
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
