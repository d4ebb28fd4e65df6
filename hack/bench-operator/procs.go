package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// procs starts the harness's child processes, each in its own process group with its output in a log file, and
// stops every one it started (stopAll, deferred by run; the children also get SIGKILL from the kernel if the
// harness itself dies, through Pdeathsig).
type procs struct {
	logDir string
	mu     sync.Mutex
	cmds   []*child
}

// child is a started process; done closes when it has exited.
type child struct {
	*exec.Cmd
	name string
	done chan struct{}
}

// exited says whether the child has exited.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// start runs bin with args; its stdout and stderr go to <logDir>/<name>.log.
func (p *procs) start(name, bin string, args ...string) (*child, error) {
	return p.startWithEnv(name, bin, nil, args...)
}

// startWithEnv is start with env (KEY=VALUE) added to the harness' own environment, for this child alone.
func (p *procs) startWithEnv(name, bin string, env []string, args ...string) (*child, error) {
	logf, err := os.Create(filepath.Join(p.logDir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{Cmd: cmd, name: name, done: make(chan struct{})}
	p.mu.Lock()
	p.cmds = append(p.cmds, c)
	p.mu.Unlock()
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(c.done) }()
	return c, nil
}

// stop sends SIGTERM to the child's process group, then SIGKILL after grace if it is still there.
func stop(c *child, grace time.Duration) {
	pgid := c.Process.Pid // Setpgid: the group id is the child's pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-c.done
	}
}

// stopAll stops every child, the last started first.
func (p *procs) stopAll() {
	p.mu.Lock()
	cmds := p.cmds
	p.cmds = nil
	p.mu.Unlock()
	for i := len(cmds) - 1; i >= 0; i-- {
		stop(cmds[i], 5*time.Second)
	}
}
