package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"sync"
	"time"
)

// The apiserver-degraded fault puts a TCP proxy of the harness between
// Karpenter and the API server. It forwards TLS untouched (the API
// server's certificate names 127.0.0.1, whatever the port), delays what the
// client sends, refuses a share of new connections and cuts established
// ones after a while, so in-flight requests fail as they do when an API
// server is overloaded or restarting. The proxy lives in the harness's
// process; Restore (and the harness's exit) stops it, and Restore points
// Karpenter back at the API server.

func init() {
	register(&Definition{
		Name: "apiserver-degraded", Layer: L1, Exclusive: true, KarpenterProcess: true,
		Summary: "Karpenter's traffic to the API server passes through a proxy of the harness that adds latency, " +
			"refuses a share of new connections and cuts established ones.",
		Params: []Param{
			{Name: "latency", Kind: Duration, Default: "300ms", Help: "delay added to every chunk a client sends"},
			{Name: "refuse", Kind: Share, Default: "0.5", Help: "share of new connections refused, from 0 (none: latency and cuts only) up to 1 (1 itself would refuse every connection, and Karpenter would never start)"},
			{Name: "cutAfter", Kind: Duration, Default: "3s", Help: "established connections are cut after this long"},
		},
		new: func(v Values, t *Target) (Injector, error) {
			def, _ := Lookup("apiserver-degraded")
			return &apiDegraded{base: base{def, v, t}}, nil
		},
	})
}

type apiDegraded struct {
	base
	p *proxy
}

func (a *apiDegraded) Inject(ctx context.Context) error {
	if a.t.Cluster == nil {
		return fmt.Errorf("fault apiserver-degraded needs a cluster provider that runs Karpenter itself (the local provider); this one does not")
	}
	u, err := url.Parse(a.t.Cluster.APIServer())
	if err != nil || u.Host == "" {
		return fmt.Errorf("failed to find the API server's address: %q", a.t.Cluster.APIServer())
	}
	p, err := startProxy(u.Host, a.v.Duration("latency"), a.v.Float("refuse"), a.v.Duration("cutAfter"))
	if err != nil {
		return err
	}
	a.p = p
	return a.t.Cluster.RestartKarpenterVia(ctx, "https://"+p.Addr())
}

func (a *apiDegraded) Restore(ctx context.Context) error {
	if a.p == nil {
		return nil
	}
	err := a.t.Cluster.RestartKarpenterVia(ctx, "")
	a.p.Close()
	a.p = nil
	if err != nil {
		return fmt.Errorf("failed to reconnect Karpenter to the API server (run `nodeprint cluster restart karpenter`): %w", err)
	}
	return nil
}

func (a *apiDegraded) MinObserve() time.Duration { return 30 * time.Second }

// proxy is a loopback TCP proxy that degrades the connections it carries.
type proxy struct {
	ln       net.Listener
	target   string
	latency  time.Duration
	refuse   float64
	cutAfter time.Duration

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startProxy(target string, latency time.Duration, refuse float64, cutAfter time.Duration) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("failed to start the API proxy: %w", err)
	}
	p := &proxy{ln: ln, target: target, latency: latency, refuse: refuse, cutAfter: cutAfter, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if rand.Float64() < p.refuse { //nolint:gosec // fault injection, not security
			_ = c.Close()
			continue
		}
		p.wg.Add(1)
		go p.handle(c)
	}
}

func (p *proxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *proxy) handle(c net.Conn) {
	defer p.wg.Done()
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	p.track(c, true)
	p.track(up, true)
	defer func() {
		_ = c.Close()
		_ = up.Close()
		p.track(c, false)
		p.track(up, false)
	}()
	if p.cutAfter > 0 {
		t := time.AfterFunc(p.cutAfter, func() { _ = c.Close(); _ = up.Close() })
		defer t.Stop()
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	go func() { _ = p.slowCopy(up, c); done <- struct{}{} }()
	<-done
}

// slowCopy forwards what the client sends, each chunk after the latency.
func (p *proxy) slowCopy(dst, src net.Conn) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			time.Sleep(p.latency)
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// Close stops accepting, cuts every connection and waits for the handlers.
func (p *proxy) Close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
