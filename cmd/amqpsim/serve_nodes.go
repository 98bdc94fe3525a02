package main

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/amqpsim/amqpsim/wire"
)

// nodeAddrs returns the AMQP address of each of n nodes: addr's host with
// addr's port, then the ports after it; every node on a free port of its
// own when addr's port is 0.
func nodeAddrs(addr string, n int) ([]string, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usageError{fmt.Sprintf("--addr %q: %v", addr, err)}
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return nil, usageError{fmt.Sprintf("--addr %q: the port must be a number from 0 to 65535", addr)}
	}
	if port > 0 && port+n-1 > 65535 {
		return nil, usageError{fmt.Sprintf("--addr %q with --nodes %d: the last node's port would be %d", addr, n, port+n-1)}
	}
	out := make([]string, n)
	for i := range out {
		p := 0
		if port > 0 {
			p = port + i
		}
		out[i] = net.JoinHostPort(host, strconv.Itoa(p))
	}
	return out, nil
}

// nodeControls answers the management API's node controls (/api/sim/...)
// once the wire server's listeners follow the change they made
// (wire.Server.WaitNodes): a client that dials after the answer finds a
// stopped node's port closed, a started one's open.
type nodeControls struct {
	http.Handler
	ws *wire.Server
}

func (h nodeControls) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/api/sim/") {
		w = &waitingWriter{ResponseWriter: w, wait: h.ws.WaitNodes}
	}
	h.Handler.ServeHTTP(w, r)
}

// waitingWriter runs wait before the response's first byte.
type waitingWriter struct {
	http.ResponseWriter
	wait func()
	once sync.Once
}

func (w *waitingWriter) WriteHeader(code int) {
	w.once.Do(w.wait)
	w.ResponseWriter.WriteHeader(code)
}

func (w *waitingWriter) Write(p []byte) (int, error) {
	w.once.Do(w.wait)
	return w.ResponseWriter.Write(p)
}
