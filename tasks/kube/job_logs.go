package kube

import (
	"bufio"
	"context"
	"strings"
	"sync"
	"time"
)

// podLogs streams the step container's log of each pod of a Job into its cluster's
// output, one goroutine per pod from when the container started, and keeps the last
// lines of each for a failure message. A log the server does not give yet (the
// container just started, the node's kubelet is slow) is asked for again a few
// times, then given up: the step's outcome does not depend on it.
//
// follow, tail, wait and close are called by the one goroutine that follows the Job.
type podLogs struct {
	ctx    context.Context
	cancel context.CancelFunc
	c      *cluster
	ns     string
	wg     sync.WaitGroup

	started map[string]bool // by pod name
	mu      sync.Mutex      // guards lines
	lines   map[string][]string
}

// keptLines is how many of a pod's last log lines are kept for its failure.
const keptLines = 20

func newPodLogs(ctx context.Context, c *cluster, ns string) *podLogs {
	ctx, cancel := context.WithCancel(ctx)
	return &podLogs{ctx: ctx, cancel: cancel, c: c, ns: ns, started: map[string]bool{}, lines: map[string][]string{}}
}

// follow starts streaming p's log once its container has started.
func (l *podLogs) follow(p podObject) {
	s, ok := p.step()
	if !ok || (s.State.Running == nil && s.State.Terminated == nil) || l.started[p.Metadata.Name] {
		return
	}
	l.started[p.Metadata.Name] = true
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.stream(p.Metadata.Name)
	}()
}

// stream copies pod's log, following it, until it ends.
func (l *podLogs) stream(pod string) {
	for try := 0; try < 10; try++ {
		rc, err := l.c.podLog(l.ctx, l.ns, pod)
		if err != nil {
			l.c.logger.Debug("pod log", "pod", pod, "error", err)
			select {
			case <-l.ctx.Done():
				return
			case <-time.After(time.Second):
				continue
			}
		}
		sc := bufio.NewScanner(rc)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Text()
			l.c.say("%s", line)
			l.mu.Lock()
			kept := append(l.lines[pod], line)
			if len(kept) > keptLines {
				kept = kept[len(kept)-keptLines:]
			}
			l.lines[pod] = kept
			l.mu.Unlock()
		}
		rc.Close()
		return
	}
}

// tail is the last n lines of pod's log seen, indented, or "".
func (l *podLogs) tail(pod string, n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := l.lines[pod]
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 0 {
		return ""
	}
	return "  " + strings.Join(lines, "\n  ")
}

// wait waits up to d for the streams to end: a finished pod's log ends by itself.
func (l *podLogs) wait(d time.Duration) {
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// close stops every stream and waits for them.
func (l *podLogs) close() {
	l.cancel()
	l.wg.Wait()
}
