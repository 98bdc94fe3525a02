package measure

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// The proxy keeps bytes in order across many writes and adds its delay
// each way. Only a lower bound on time is checked: the delay can make a
// round trip slower than 2×delay, never faster, so the check cannot fail
// by chance.
func TestProxyDelaysAndKeepsOrder(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		io.Copy(c, c) // echo
		c.Close()
	}()
	const delay = 5 * time.Millisecond
	p, err := NewProxy(ln.Addr().String(), delay)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var want bytes.Buffer
	start := time.Now()
	for i := range 200 {
		msg := bytes.Repeat([]byte{byte(i)}, 1+i*37%500)
		want.Write(msg)
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
	}
	got := make([]byte, want.Len())
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 2*delay {
		t.Errorf("the echo came back after %v, before two delays of %v", took, delay)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Error("the echo differs from what was sent")
	}
}

func TestProxyCloseEndsConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(io.Discard, c)
		}
	}()
	p, err := NewProxy(ln.Addr().String(), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("hello"))
	closed := make(chan struct{})
	go func() { p.Close(); close(closed) }() // returns only once its goroutines are done
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Proxy.Close did not return within 10 s: its goroutines did not end")
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("the client connection is still open after Close")
	}
}
