package testenv

import (
	"context"
	"fmt"
	"os"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Main is the one TestMain of the controller suites. It starts the API server, stores it in *env for the tests,
// lets setup register the suite's controllers on a manager of its making (a setup that returns a nil manager, or a
// nil setup, runs the tests without one: they drive their controller themselves), starts that manager, runs the
// tests, then stops the manager and the API server, in that order, and exits with the tests' code.
func Main(m *testing.M, env **Env, setup func(*Env) (ctrl.Manager, error)) {
	os.Exit(run(m, env, setup))
}

func run(m *testing.M, env **Env, setup func(*Env) (ctrl.Manager, error)) int {
	e, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "envtest:", err)
		return 1
	}
	defer func() {
		if err := e.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "envtest stop:", err)
		}
	}()
	*env = e
	if setup == nil {
		return m.Run()
	}
	mgr, err := setup(e)
	if err != nil {
		fmt.Fprintln(os.Stderr, "setup:", err)
		return 1
	}
	if mgr == nil {
		return m.Run()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return m.Run()
}
