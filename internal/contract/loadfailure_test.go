package contract

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/controllers/staticsite"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
)

// The content-failure contract (controllers/staticsite/loadfailure.go, images/server/src/site/load_error.rs): what the
// operator reads when a server refuses its content, from the two places it can read it.

// A running server whose reload fails: the operator's scraper sees hyperstatic_content_load_failed and reads the
// message, with file and line, from the admin port; once fixed, both clear.
func TestContractReloadFailureReadByTheScraper(t *testing.T) {
	bin := serverbin.Require(t)
	root := writeSite(t)
	srv := serverbin.Start(t, bin, operatorArgs(t, bin, site(servedSpec), root))
	waitSample := sampler(t, srv)
	if s := waitSample("a good start", func(s podmetrics.Sample) bool { return true }); s.LoadFailed || s.LoadError != "" {
		t.Fatalf("a server that loaded its content reports LoadFailed=%v %q", s.LoadFailed, s.LoadError)
	}
	if err := os.WriteFile(filepath.Join(root, "_redirects"), []byte("/a /b\n/c /d 418\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := waitSample("the failed reload", func(s podmetrics.Sample) bool { return s.LoadFailed })
	if !strings.Contains(s.LoadError, "_redirects:2: status 418 is not supported") {
		t.Errorf("LoadError %q does not name the file, the line and the problem", s.LoadError)
	}
	if err := os.WriteFile(filepath.Join(root, "_redirects"), []byte("/a /b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := waitSample("the fixed reload", func(s podmetrics.Sample) bool { return !s.LoadFailed }); s.LoadError != "" {
		t.Errorf("LoadError %q after a good reload", s.LoadError)
	}
}

// A server whose first load fails, run as the operator's container runs it: the container leaves the termination
// message at the kubelet's defaults (path /dev/termination-log, policy File), the server writes there by default,
// and what it writes, as the kubelet would show it in the container status, is what the operator recognises as a
// content failure.
func TestContractStartFailureInTheTerminationMessage(t *testing.T) {
	bin := serverbin.Require(t)
	server := desiredPodSpec(t).Containers[0]
	if server.TerminationMessagePath != "" || server.TerminationMessagePolicy != "" {
		t.Errorf("the server container sets terminationMessagePath %q / policy %q: the kubelet's defaults are the contract",
			server.TerminationMessagePath, server.TerminationMessagePolicy)
	}
	help, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("--help: %v\n%s", err, help)
	}
	if !strings.Contains(strings.Join(strings.Fields(string(help)), " "), "by default "+corev1.TerminationMessagePathDefault+" when that file exists") {
		t.Errorf("the server's --help does not say it writes to the kubelet's default %s:\n%s", corev1.TerminationMessagePathDefault, help)
	}
	// The kubelet's file, stood in for by a temporary one (this test cannot create /dev/termination-log).
	local := filepath.Join(t.TempDir(), "termination-log")
	env := []string{}
	for _, e := range server.Env {
		env = append(env, e.Name+"="+e.Value)
	}

	root := writeSite(t)
	if err := os.WriteFile(filepath.Join(root, "_redirects"), []byte("/a /b\n/c /d 302 Country=us\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	serverbin.RequireSiteValue(t, bin)
	args := serverbin.WithSiteValue(t, serverbin.SetFlag(t, server.Args, "--root", root), sitevalue.Render(site(servedSpec)).Bytes)
	args = append(args, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--termination-log", local)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(serverbin.CleanEnv(), env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("the server started on a bad _redirects (err %v):\n%s", err, out)
	}
	msg, err := os.ReadFile(local)
	if err != nil {
		t.Fatalf("no termination log: %v\n%s", err, out)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "contract-0"}, Status: corev1.PodStatus{
		ContainerStatuses: []corev1.ContainerStatus{{Name: server.Name,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(exit.ExitCode()), Message: string(msg)}},
		}}}}
	got, ok := staticsite.StartFailure(pod)
	if !ok || !strings.Contains(got, "_redirects:2: Country=us: conditions (Country=) are not supported") {
		t.Errorf("the operator reads %q (content failure: %v) from the termination message %q", got, ok, msg)
	}
}
