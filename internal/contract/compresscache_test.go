package contract

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
)

// The container-environment contract: the operator tells the server where its compression cache is through a
// variable on the server container (controllers/staticsite/desired/cachevolume.go), not an argument, so the argument
// tests above do not see it. Here the real server runs with the container's own arguments and variables, each
// variable that points at an emptyDir mount swapped for a temporary directory, and must write its background
// encodings there: a renamed variable would be silently ignored by the server (unknown variables are), leaving
// every restart to encode the site again.
func TestContractCompressCacheFromTheContainerEnvironment(t *testing.T) {
	bin := serverbin.Require(t)
	pod := desiredPodSpec(t)
	server := pod.Containers[0]

	emptyDirs := map[string]string{} // mount path → local directory
	for _, m := range server.VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.EmptyDir != nil {
				emptyDirs[m.MountPath] = t.TempDir()
			}
		}
	}
	var env []string
	var cacheDir string
	for _, e := range server.Env {
		if local, ok := emptyDirs[e.Value]; ok {
			e.Value, cacheDir = local, local
		}
		env = append(env, e.Name+"="+e.Value)
	}
	if cacheDir == "" {
		t.Fatalf("no variable of the server container points at an emptyDir mount: env %v mounts %v", server.Env, server.VolumeMounts)
	}
	serverbin.RequireSiteValue(t, bin)
	args := serverbin.WithSiteValue(t, serverbin.SetFlag(t, server.Args, "--root", writeSite(t)), sitevalue.Render(site(servedSpec)).Bytes)
	srv := serverbin.Start(t, bin, args, env...)

	// Wait for the background encoder to finish (it writes each encoding before it counts the file done).
	host, port, _ := net.SplitHostPort(srv.AdminAddr)
	adminPort, _ := strconv.Atoi(port)
	scraper := &podmetrics.HTTPScraper{Client: &http.Client{Timeout: 5 * time.Second}, Port: adminPort}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "contract-0"}, Status: corev1.PodStatus{PodIP: host}}
	for deadline := time.Now().Add(30 * time.Second); ; {
		sample, err := scraper.Scrape(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if sample.Content != nil && sample.Content.EncodingsPending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("encodings still pending after 30s: %+v\nstderr:\n%s", sample.Content, srv.Stderr)
		}
		time.Sleep(20 * time.Millisecond) // poll interval: the encoder runs at idle priority
	}
	entries, err := os.ReadDir(cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	var br, gz int
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".br":
			br++
		case ".gz":
			gz++
		}
	}
	// siteFiles has one compressible file over 1 KiB (assets/app.js): at least its two encodings are there.
	if br == 0 || gz == 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("the server wrote no encodings to the cache the container environment names (%s): %q\nenv: %q\nstderr:\n%s",
			cacheDir, names, env, srv.Stderr)
	}
}
