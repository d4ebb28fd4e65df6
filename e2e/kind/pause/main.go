// Command pause is the pod sandbox process (registry.k8s.io/pause): it holds the pod's namespaces, reaps
// zombies (it is PID 1 of the pod when PID namespaces are shared) and exits on SIGINT/SIGTERM. A Go version of
// Kubernetes' build/pause/linux/pause.c, so the image builds here without a C toolchain or a registry.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if os.Getpid() != 1 {
		os.Stderr.WriteString("Warning: pause should be the first process\n")
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every exited child without blocking.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
