package measure

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy is a TCP proxy on 127.0.0.1 that adds a fixed delay in each
// direction in front of a broker: a network with a chosen round trip (twice
// the delay, plus loopback's own few tens of microseconds). Bytes keep
// their order and are not throttled: a chunk read at t is written at
// t+delay, whatever follows it.
type Proxy struct {
	ln     net.Listener
	target string
	delay  time.Duration

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// NewProxy listens on a free loopback port and forwards every connection to
// target with delay added each way.
func NewProxy(target string, delay time.Duration) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, delay: delay, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr returns the address clients dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops the proxy, closes every proxied connection and waits for its
// goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		if !p.track(client, server) {
			return
		}
		p.wg.Go(func() { p.pipe(client, server) })
		p.wg.Go(func() { p.pipe(server, client) })
	}
}

type chunk struct {
	due  time.Time
	data []byte
}

// pipe copies src to dst, each chunk delay after it was read. A reader and
// a writer goroutine keep the pipeline full: a chunk does not wait for the
// previous one's delay. The writer sends every chunk that is due in one
// write: a real network's delay costs the hosts nothing, and a wake-up and
// a write per chunk would spend the machine's two cores on the proxy.
func (p *Proxy) pipe(src, dst net.Conn) {
	queue := make(chan chunk, 4096)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sl := NewSleeper()
		var next *chunk
		for {
			if next == nil {
				c, ok := <-queue
				if !ok {
					return
				}
				next = &c
			}
			sl.Until(next.due)
			bufs := net.Buffers{next.data}
			next = nil
		due:
			for {
				select {
				case c, ok := <-queue:
					if !ok {
						break due
					}
					if c.due.After(time.Now()) {
						next = &c
						break due
					}
					bufs = append(bufs, c.data)
				default:
					break due
				}
			}
			if _, err := bufs.WriteTo(dst); err != nil {
				// Drain what is left so the reader never blocks on a
				// dead writer.
				for range queue {
				}
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			queue <- chunk{due: time.Now().Add(p.delay), data: append([]byte(nil), buf[:n]...)}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				src.Close()
			}
			break
		}
	}
	close(queue)
	<-done
	// The other direction learns of the end by its own read failing.
	dst.Close()
	src.Close()
}
