// Command bench-results copies a Benchmark's results out of the cluster into files: results.json, results.csv and
// chart.svg from its results ConfigMap, plus summary.json (the status summary). It prints the summary and the
// per-step table. Uses the usual kubeconfig (KUBECONFIG, ~/.kube/config or in-cluster).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/benchresults"
)

func main() {
	name := flag.String("benchmark", "", "Benchmark name (required)")
	ns := flag.String("namespace", "default", "namespace of the Benchmark")
	out := flag.String("out", "bench-results", "directory to write the files into")
	flag.Parse()
	if *name == "" {
		fmt.Fprintln(os.Stderr, "usage: bench-results -benchmark <name> [-namespace <ns>] [-out <dir>]")
		os.Exit(2)
	}
	if err := run(*name, *ns, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench-results:", err)
		os.Exit(1)
	}
}

func run(name, ns, out string) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b v1alpha1.Benchmark
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &b); err != nil {
		return err
	}
	if b.Status.Results == "" {
		return fmt.Errorf("no results yet for Benchmark %s/%s (phase %q)", ns, name, b.Status.Phase)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: b.Status.Results}, &cm); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	written := 0
	for _, key := range []string{benchresults.ResultsJSONKey, benchresults.ResultsCSVKey, benchresults.ChartKey, benchresults.ServerSamplesKey} {
		v, ok := cm.Data[key]
		if !ok {
			continue
		}
		if err := os.WriteFile(filepath.Join(out, key), []byte(v), 0o644); err != nil {
			return err
		}
		written++
	}
	summary, err := json.MarshalIndent(b.Status, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "status.json"), summary, 0o644); err != nil {
		return err
	}
	if _, ok := cm.Data[benchresults.ResultsJSONKey]; !ok {
		return fmt.Errorf("ConfigMap %s holds no %s yet (phase %q)", cm.Name, benchresults.ResultsJSONKey, b.Status.Phase)
	}
	fmt.Printf("Benchmark %s/%s: phase %s, target %s\n", ns, name, b.Status.Phase, b.Status.Target)
	if s := b.Status.Summary; s != nil {
		fmt.Printf("peak %s req/s, p50 %s, p90 %s, p99 %s at the peak; %d requests, %d errors (%s); %d/%d steps client-bound; verdict %q %s\n",
			s.Peak, s.P50, s.P90, s.P99, s.Requests, s.Errors, s.ErrorRate, s.ClientBoundSteps, s.Steps, s.Verdict, s.VerdictReason)
	}
	fmt.Println()
	fmt.Print(cm.Data[benchresults.ResultsCSVKey])
	fmt.Printf("\nwrote %d file(s) and status.json to %s\n", written, out)
	return nil
}
