package serverbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// ContentAgentEnvVar names a prebuilt `content-agent` (cmd/content-agent): `make go-test` builds bin/content-agent
// and sets it. Without it, ContentAgent builds the command once per test process, as make does.
const ContentAgentEnvVar = "HYPERSTATIC_CONTENT_AGENT_BIN"

var (
	agentOnce sync.Once
	agentPath string
	agentErr  error
)

// ContentAgent returns the path of the real content-agent binary for tests that run it (the contract tests, the
// fetcher's webhook limits), failing the test with the reason when there is none.
func ContentAgent(tb testing.TB) string {
	tb.Helper()
	agentOnce.Do(func() { agentPath, agentErr = locateContentAgent() })
	if agentErr != nil {
		tb.Fatalf("content-agent binary: %v", agentErr)
	}
	return agentPath
}

func locateContentAgent() (string, error) {
	if p, set, err := fromEnv(ContentAgentEnvVar); set {
		return p, err
	}
	dir, err := os.MkdirTemp("", "content-agent-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "content-agent")
	// make content-agent-build's command (the image's binary, whose memory some tests measure), by the module
	// path: go test runs in the package's directory.
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "hyperstatic.dev/hyperstatic/cmd/content-agent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build cmd/content-agent: %w\n%s", err, out)
	}
	return bin, nil
}
