// Command pause is the sandbox container of the test node's pods (containerd's sandbox_image), built here
// because no registry is reachable: it holds the pod's namespaces, exits on SIGINT/SIGTERM, and reaps the
// processes that end in its PID namespace.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for received := range signals {
		if received != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
