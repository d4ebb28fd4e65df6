package contract

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/controllers/pool"
	"hyperstatic.dev/hyperstatic/internal/poolread"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// A pool pod's held drain, between the pool controller's releaser (internal/poolread) and the real server run with
// the operator's own pool arguments (pool.ServerArgs): before its SIGTERM the server refuses a release as
// ErrNotDraining (the controller tries again); after it, the server keeps accepting (the hold, not the 5 s drain
// delay, bounds it) until the release is accepted, then stops accepting after the drain delay and exits.
func TestContractPoolPodDrainReleasedByTheOperator(t *testing.T) {
	bin := serverbin.Require(t)
	srv := serverbin.Start(t, bin, serverbin.SetFlag(t, pool.ServerArgs(), "--sites", t.TempDir()))
	releaser := poolread.NewHTTPReader(srv.AdminPort(), 0)
	releaser.Addr = func(*corev1.Pod, int) string { return srv.AdminAddr }
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pool-pod"}}
	ctx := context.Background()

	if err := releaser.ReleaseDrain(ctx, pod); !errors.Is(err, poolread.ErrNotDraining) {
		t.Fatalf("a release before the SIGTERM: %v, want ErrNotDraining", err)
	}
	srv.Signal(t, syscall.SIGTERM)
	testenv.Eventually(t, "readiness fails", func() error {
		resp, err := http.Get("http://" + srv.AdminAddr + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return fmt.Errorf("/readyz still 200")
		}
		return nil
	})
	// Past the pool's 5 s drain delay the held server still accepts connections.
	time.Sleep(7 * time.Second)
	c, err := net.DialTimeout("tcp", srv.HTTPAddr, time.Second)
	if err != nil {
		t.Fatalf("the held server stopped accepting before its release: %v", err)
	}
	_ = c.Close()
	select {
	case <-srv.Exited():
		t.Fatal("the held server exited before its release")
	default:
	}
	if err := releaser.ReleaseDrain(ctx, pod); err != nil {
		t.Fatalf("release: %v", err)
	}
	select {
	case <-srv.Exited():
	case <-time.After(40 * time.Second):
		t.Fatalf("not exited 40 s after the release (drain delay 5 s, shutdown 10 s); stderr:\n%s", srv.Stderr.String())
	}
}
