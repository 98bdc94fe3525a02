//go:build linux

package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/sim"
)

// fdChildEnv makes the test binary run TestServeSurvivesFileDescriptorExhaustion's
// child half: the descriptor limit is lowered in a process of its own, so
// that the test process keeps its limit.
const fdChildEnv = "AMQPSIM_WIRE_FD_CHILD"

// TestServeSurvivesFileDescriptorExhaustion: an accept that fails because
// the process is out of file descriptors does not end Serve; once
// descriptors are free again, the waiting client is accepted and served
// (RabbitMQ's acceptor logs "out of file descriptors" and accepts again).
// The test binary runs itself again with a low RLIMIT_NOFILE, takes every
// descriptor, frees one for a client's socket, waits for the server to
// report the failed accept, frees the rest and completes an AMQP handshake.
func TestServeSurvivesFileDescriptorExhaustion(t *testing.T) {
	if os.Getenv(fdChildEnv) == "1" {
		fdChild(t)
		return
	}
	if testing.Short() {
		t.Skip("runs a child process")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestServeSurvivesFileDescriptorExhaustion$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), fdChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("child:\n%s", out)
}

// fdChild is the child half: it runs with a soft limit of 64 descriptors.
func fdChild(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	lim.Cur = 64
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(sim.New(sim.Config{}))
	exhausted := make(chan string, 16)
	s.Logf = func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		t.Log(line)
		if strings.Contains(line, "out of file descriptors") {
			select {
			case exhausted <- line:
			default:
			}
		}
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	defer s.Close()

	// Take every descriptor, then give one back for the client's socket:
	// the server's accept of that connection finds none.
	var held []*os.File
	defer func() {
		for _, f := range held {
			f.Close()
		}
	}()
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				t.Fatal(err)
			}
			break
		}
		held = append(held, f)
		if len(held) > 1000 {
			t.Fatal("RLIMIT_NOFILE did not take")
		}
	}
	held[len(held)-1].Close()
	held = held[:len(held)-1]
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial with one descriptor free: %v", err)
	}
	defer conn.Close()

	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	select {
	case line := <-exhausted:
		t.Logf("the server reported: %s", line)
	case err := <-served:
		t.Fatalf("Serve returned %v: the listener is gone", err)
	case <-deadline.C:
		t.Fatal("no failed accept reported within 30 s")
	}
	for _, f := range held {
		f.Close()
	}
	held = nil

	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	c, err := amqp.Open(conn, amqp.Config{Heartbeat: 0, Vhost: "/", Locale: "en_US",
		SASL: []amqp.Authentication{&amqp.PlainAuth{Username: "guest", Password: "guest"}}})
	if err != nil {
		t.Fatalf("handshake after descriptors were freed: %v", err)
	}
	defer c.Close()
	ch, err := c.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("after-emfile", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-served:
		t.Fatalf("Serve returned %v", err)
	default:
	}
}
