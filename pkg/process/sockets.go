package process

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Socket is a listening TCP socket and the process that holds it.
type Socket struct {
	PID  int
	Addr netip.AddrPort
}

// ListeningSockets lists the listening TCP sockets (IPv4 and IPv6) held by
// the given processes, read from /proc.
func ListeningSockets(pids []int) ([]Socket, error) {
	listening := map[string]netip.AddrPort{} // inode -> address
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return nil, fmt.Errorf("failed to read %s: %w", f, err)
		}
		m, err := parseProcNetTCP(fh)
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("failed to parse %s: %w", f, err)
		}
		for k, v := range m {
			listening[k] = v
		}
	}
	var out []Socket
	for _, pid := range pids {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			continue // the process is gone
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			if addr, ok := listening[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")]; ok {
				out = append(out, Socket{PID: pid, Addr: addr})
			}
		}
	}
	return out, nil
}

// parseProcNetTCP returns the listening sockets of a /proc/net/tcp{,6}
// table, keyed by inode.
func parseProcNetTCP(r io.Reader) (map[string]netip.AddrPort, error) {
	out := map[string]netip.AddrPort{}
	sc := bufio.NewScanner(r)
	sc.Scan() // header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != "0A" { // 0A: TCP_LISTEN
			continue
		}
		addr, err := parseHexAddr(f[1])
		if err != nil {
			return nil, err
		}
		out[f[9]] = addr
	}
	return out, sc.Err()
}

// parseHexAddr decodes "0100007F:1F90" (IPv4) or the 32-digit IPv6 form.
// The kernel prints each 32-bit word of the address in host (little-endian) order.
func parseHexAddr(s string) (netip.AddrPort, error) {
	ipHex, portHex, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
	}
	raw, err := hex.DecodeString(ipHex)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
	}
	for i := 0; i < len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("bad port in %q", s)
	}
	ip, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(ip.Unmap(), uint16(port)), nil
}
