package cluster

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// A Karpenter switch waits for the old process's ports instead of starting
// beside it (which failed as "karpenter exited during start-up"), and says
// which port stayed taken when it never frees.
func TestWaitPortsFreeWaitsAndNamesTheTakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	err = waitPortsFree(context.Background(), 300*time.Millisecond, 0, port)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("127.0.0.1:%d is still taken", port)) {
		t.Fatalf("a held port: %v", err)
	}
	go func() { time.Sleep(200 * time.Millisecond); _ = ln.Close() }()
	if err := waitPortsFree(context.Background(), 5*time.Second, port); err != nil {
		t.Fatalf("a port freed after 200 ms: %v", err)
	}
}
