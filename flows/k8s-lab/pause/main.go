// Command lab-pause is the lab's pod sandbox process, the part of
// registry.k8s.io/pause the lab needs: it holds a pod's namespaces open by
// sleeping until SIGINT or SIGTERM, then exits 0, and as PID 1 of a pod with a
// shared PID namespace it reaps the zombies re-parented to it. It is built
// static (CGO_ENABLED=0) into a scratch image as /pause; see docs/k8s-lab-images.md.
// It owns nothing else: no flags but -v, no output but on -v and on errors.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// version names what it stands in for: pause 3.6, containerd 1.6's sandbox_image.
const version = "lab-pause 3.6 (flow)"

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "-v", "--version":
			fmt.Println(version)
			return
		default:
			fmt.Fprintf(os.Stderr, "lab-pause: unknown argument %q; it takes only -v\n", os.Args[1])
			os.Exit(2)
		}
	}
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s == syscall.SIGCHLD {
			reap()
			continue
		}
		os.Exit(0)
	}
}

// reap collects every child that has exited; one SIGCHLD may stand for many.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
