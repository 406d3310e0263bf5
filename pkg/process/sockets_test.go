package process

import (
	"net"
	"strings"
	"testing"
)

func TestParseProcNetTCP(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1 0000000000000000 100 0 0 10 0
   1: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2222 1 0000000000000000 100 0 0 10 0
   2: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 3333 1 0000000000000000 20 4 30 10 -1
   3: 00000000000000000000000001000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4444 1
`
	got, err := parseProcNetTCP(strings.NewReader(table))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"1111": "127.0.0.1:8080", "2222": "0.0.0.0:2024", "4444": "[::1]:80"}
	if len(got) != len(want) {
		t.Fatalf("want %d listening sockets (the established one is skipped), got %v", len(want), got)
	}
	for inode, addr := range want {
		if got[inode].String() != addr {
			t.Errorf("inode %s: want %s, got %s", inode, addr, got[inode])
		}
	}
}

func TestListeningSocketsFindsOwnListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	socks, err := ListeningSockets([]int{selfPID()})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range socks {
		if int(s.Addr.Port()) == port {
			if !s.Addr.Addr().IsLoopback() {
				t.Fatalf("listener on %s reported as %s", ln.Addr(), s.Addr)
			}
			return
		}
	}
	t.Fatalf("own listener on port %d not found among %v", port, socks)
}
