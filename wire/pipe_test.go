package wire

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

func TestPipeWritesNeverBlock(t *testing.T) {
	a, b := Pipe()
	defer a.Close()
	defer b.Close()
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for range 32 { // 32 MiB, nobody reading
		if n, err := a.Write(chunk); n != len(chunk) || err != nil {
			t.Fatalf("write = %d, %v", n, err)
		}
	}
	a.(interface{ CloseWrite() error }).CloseWrite()
	n, err := io.Copy(io.Discard, b)
	if n != 32<<20 || err != nil {
		t.Fatalf("read %d bytes, %v", n, err)
	}
	// The other direction still works after a half-close.
	b.Write([]byte("back"))
	buf := make([]byte, 4)
	if _, err := io.ReadFull(a, buf); err != nil || string(buf) != "back" {
		t.Fatalf("read back %q, %v", buf, err)
	}
}

func TestPipeClose(t *testing.T) {
	a, b := Pipe()
	a.Write([]byte("last words"))
	a.Close()
	if got, err := io.ReadAll(b); string(got) != "last words" || err != nil {
		t.Errorf("peer read %q, %v", got, err)
	}
	if _, err := b.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("write to a closed peer: %v", err)
	}
	if _, err := a.Read(make([]byte, 1)); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("read after Close: %v", err)
	}
	if _, err := a.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("write after Close: %v", err)
	}
	if a.LocalAddr().String() != "client" || a.RemoteAddr().Network() != "amqpsim" {
		t.Errorf("addresses %v %v", a.LocalAddr(), a.RemoteAddr())
	}
}

// A reset end's peer reads what was written, then "connection reset by
// peer" (syscall.ECONNRESET), as from a TCP reset.
func TestPipeReset(t *testing.T) {
	a, b := Pipe()
	a.Write([]byte("last words"))
	a.(interface{ Reset() error }).Reset()
	got, err := io.ReadAll(b)
	if string(got) != "last words" || !errors.Is(err, syscall.ECONNRESET) || !strings.Contains(err.Error(), "connection reset by peer") {
		t.Errorf("peer read %q, %v; want the words, then a reset", got, err)
	}
	if _, err := a.Read(make([]byte, 1)); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("read after Reset: %v", err)
	}
}

// TestPipeDeadlines runs in a synctest bubble: deadlines follow the fake
// clock, and a blocked Read is durably blocked.
func TestPipeDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := Pipe()
		defer a.Close()
		defer b.Close()
		start := time.Now()
		a.SetReadDeadline(start.Add(3 * time.Second))
		_, err := a.Read(make([]byte, 1))
		var ne interface{ Timeout() bool }
		if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("read: %v", err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("deadline fired after %v", d)
		}
		// Clearing the deadline lets a later write through.
		a.SetReadDeadline(time.Time{})
		go func() {
			time.Sleep(time.Minute)
			b.Write([]byte("late"))
		}()
		buf := make([]byte, 4)
		if _, err := io.ReadFull(a, buf); err != nil || string(buf) != "late" {
			t.Fatalf("read %q, %v", buf, err)
		}
		// A deadline in the past fails at once; so does a write deadline.
		a.SetDeadline(time.Now().Add(-time.Second))
		if _, err := a.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("read past deadline: %v", err)
		}
		if _, err := a.Write(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("write past deadline: %v", err)
		}
	})
}

// TestPipeReadIdle: an end is read-idle only while a Read waits on an
// empty buffer (or once it is closed), and OnReadIdle hears each such
// wait; bytes written, or taken by a Read that has not returned, make it
// busy.
func TestPipeReadIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, server := Pipe()
		defer client.Close()
		ri := server.(interface {
			ReadIdle() bool
			OnReadIdle(func())
		})
		var waits atomic.Int32
		ri.OnReadIdle(func() { waits.Add(1) })
		if ri.ReadIdle() {
			t.Error("idle before any Read")
		}
		got := make(chan string)
		go func() {
			for {
				buf := make([]byte, 16)
				n, err := server.Read(buf)
				if err != nil {
					close(got)
					return
				}
				got <- string(buf[:n])
			}
		}()
		synctest.Wait()
		if !ri.ReadIdle() || waits.Load() != 1 {
			t.Errorf("a Read waiting on nothing: idle %v, %d waits", ri.ReadIdle(), waits.Load())
		}
		client.Write([]byte("frame"))
		if ri.ReadIdle() {
			t.Error("idle with a byte written and unread")
		}
		synctest.Wait() // the reader took the bytes and waits to hand them over
		if ri.ReadIdle() {
			t.Error("idle while the reader holds what it read")
		}
		if s := recv(t, got); s != "frame" {
			t.Errorf("read %q", s)
		}
		synctest.Wait()
		if !ri.ReadIdle() || waits.Load() != 2 {
			t.Errorf("reading again: idle %v, %d waits", ri.ReadIdle(), waits.Load())
		}
		server.Close()
		select {
		case _, ok := <-got:
			if ok || !ri.ReadIdle() {
				t.Error("a closed end is not idle")
			}
		case <-time.After(time.Second):
			t.Fatal("the reader did not end with its end closed")
		}
	})
}

// A server write that waits for room in the client's direction goes
// through once the client reads, with no other call on the pipe.
func TestPipeWriteWaitsForRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, server := Pipe()
		defer client.Close()
		defer server.Close()
		full := make([]byte, ServerWriteBuffer)
		if _, err := server.Write(full); err != nil {
			t.Fatal(err)
		}
		wrote := make(chan error)
		go func() {
			_, err := server.Write([]byte("more"))
			wrote <- err
		}()
		synctest.Wait()
		select {
		case err := <-wrote:
			t.Fatalf("wrote past the buffer's limit: %v", err)
		default:
		}
		if _, err := io.ReadFull(client, full); err != nil {
			t.Fatal(err)
		}
		if err := <-wrote; err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4)
		if _, err := io.ReadFull(client, buf); err != nil || string(buf) != "more" {
			t.Fatalf("read %q, %v", buf, err)
		}
	})
}

// A server write that waits for room fails when the client closes its
// end: it must not succeed into the closed pipe, or the server would take
// the bytes as sent (and the broker send more to a client that is gone).
func TestPipeWaitingWriteFailsWhenTheReaderCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, server := Pipe()
		defer server.Close()
		if _, err := server.Write(make([]byte, ServerWriteBuffer)); err != nil {
			t.Fatal(err)
		}
		wrote := make(chan error)
		go func() {
			_, err := server.Write([]byte("more"))
			wrote <- err
		}()
		synctest.Wait()
		client.Close()
		if err := <-wrote; !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("the waiting write returned %v after the client closed, want io.ErrClosedPipe", err)
		}
	})
}

// A deadline moved while a reader waits, later as amqp091-go moves it
// after every frame, or earlier, holds the reader exactly until the last
// one set; setting one arms no timer of its own.
func TestPipeDeadlineMovedWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := Pipe()
		defer a.Close()
		defer b.Close()
		start := time.Now()
		a.SetReadDeadline(start.Add(time.Second))
		done := make(chan time.Duration)
		read := func() { // until the deadline
			_, err := a.Read(make([]byte, 1))
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("read: %v", err)
			}
			done <- time.Since(start)
		}
		go read()
		for range 5 { // later, before each passes
			time.Sleep(500 * time.Millisecond)
			a.SetReadDeadline(time.Now().Add(time.Second))
		}
		if d := <-done; d != 3500*time.Millisecond {
			t.Errorf("moved later: the read failed after %v, want 3.5s", d)
		}
		start = time.Now()
		a.SetReadDeadline(start.Add(time.Hour))
		go read()
		synctest.Wait()
		a.SetReadDeadline(start.Add(2 * time.Second))
		if d := <-done; d != 2*time.Second {
			t.Errorf("moved earlier: the read failed after %v, want 2s", d)
		}
	})
}

// A pipe drained of a large write keeps no room of that size: 40 clients
// that each wrote one 8 MiB message while the server did not read (the
// memory alarm blocked it) kept 320 MiB of pipe buffers once the server
// had read them.
func TestPipeDrainedKeepsNoLargeBuffer(t *testing.T) {
	client, server := Pipe()
	defer client.Close()
	defer server.Close()
	msg := make([]byte, 8<<20)
	if _, err := client.Write(msg); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(server, make([]byte, len(msg))); err != nil {
		t.Fatal(err)
	}
	h := server.(*pipeConn).rx
	h.mu.Lock()
	defer h.mu.Unlock()
	if cap(h.buf) > pipeKeep {
		t.Errorf("the drained pipe keeps %d bytes of room, want at most %d", cap(h.buf), pipeKeep)
	}
}
