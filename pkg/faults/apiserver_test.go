package faults

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func TestProxyForwardsThenCuts(t *testing.T) {
	p, err := startProxy(echoServer(t), time.Millisecond, 0, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("echo through the proxy: %q, %v", line, err)
	}
	// The proxy cuts the connection after cutAfter: the next read ends.
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("the connection should have been cut")
	}
}

func TestProxyRefusesAndCloses(t *testing.T) {
	p, err := startProxy(echoServer(t), 0, 0.999999, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a refused connection should be closed")
	}
	_ = c.Close()
	p.Close()
	if _, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Fatal("a closed proxy must not accept connections")
	}
}
