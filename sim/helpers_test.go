package sim_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// env is a broker with one connection ("app") and one open channel.
type env struct {
	t    *testing.T
	b    *sim.Broker
	conn *sim.Connection
	ch   *sim.Channel
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvConfig(t, sim.Config{})
}

// newEnvConfig is newEnv with a configured broker.
func newEnvConfig(t *testing.T, cfg sim.Config) *env {
	t.Helper()
	b := sim.New(cfg)
	conn := b.Connect("app")
	e := &env{t: t, b: b, conn: conn}
	e.ch = e.channel(conn)
	return e
}

// channel opens a channel on conn, failing the test on error.
func (e *env) channel(conn *sim.Connection) *sim.Channel {
	e.t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		e.t.Fatalf("open channel: %v", err)
	}
	return ch
}

// declare declares a queue on e.ch with options, failing the test on error.
func (e *env) declare(name string, o sim.QueueOptions) {
	e.t.Helper()
	if _, err := e.ch.QueueDeclare(name, o); err != nil {
		e.t.Fatalf("declare %q: %v", name, err)
	}
}

// publish sends each body to queue q through the default exchange.
func (e *env) publish(q string, bodies ...string) {
	e.t.Helper()
	for _, body := range bodies {
		if err := e.b.Publish("/", "", q, sim.Message{Body: []byte(body)}); err != nil {
			e.t.Fatalf("publish to %q: %v", q, err)
		}
	}
}

// publishOn publishes bodies to queue q on ch with props.
func (e *env) publishOn(ch *sim.Channel, q string, props sim.Properties, bodies ...string) {
	e.t.Helper()
	for _, b := range bodies {
		e.must(ch.Publish("", q, sim.PublishOptions{}, sim.Message{Properties: props, Body: []byte(b)}))
	}
}

// consume starts a consumer, failing the test on error.
func (e *env) consume(ch *sim.Channel, q, tag string, o sim.ConsumeOptions) *sim.Consumer {
	e.t.Helper()
	o.Tag = tag
	c, err := ch.Consume(q, o)
	if err != nil {
		e.t.Fatalf("consume %q from %q: %v", tag, q, err)
	}
	return c
}

// qos applies basic.qos, failing the test on error.
func (e *env) qos(ch *sim.Channel, count int, global bool) {
	e.t.Helper()
	if err := ch.Qos(count, 0, global); err != nil {
		e.t.Fatalf("qos(%d, %t): %v", count, global, err)
	}
}

// must fails the test on a non-nil error.
func (e *env) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// stats returns a queue's stats, failing the test on error.
func (e *env) stats(q string) sim.QueueStats {
	e.t.Helper()
	s, err := e.b.QueueStats("/", q)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// ready returns the bodies of a queue's ready messages in fetch order.
func (e *env) ready(q string) []string {
	e.t.Helper()
	ms, err := e.b.QueueMessages("/", q)
	if err != nil {
		e.t.Fatal(err)
	}
	out := []string{}
	for _, m := range ms {
		out = append(out, string(m.Body))
	}
	return out
}

// exists reports whether queue q exists in vhost "/".
func (e *env) exists(q string) bool {
	_, err := e.b.QueueStats("/", q)
	return err == nil
}

func bodies(ds []sim.Delivery) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, string(d.Body))
	}
	return out
}

// msgs returns "m1".."mn".
func msgs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("m%d", i+1)
	}
	return out
}

// diff fails the test with a go-cmp diff when got and want differ.
func diff(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

// wantErr checks that err is (or wraps) a protocol error with the given
// code, text, method and scope.
func wantErr(t *testing.T, err error, code int, text string, m protocol.Method) {
	t.Helper()
	var perr *sim.Error
	if !errors.As(err, &perr) || perr == nil {
		t.Fatalf("want protocol error %d %q, got %v", code, text, err)
	}
	want := sim.Error{Code: code, Text: text, Method: m, Hard: protocol.IsHard(code)}
	diff(t, "error", want, *perr)
}

// wantClosed checks that err reports a closed channel or connection whose
// cause is cause (nil for a clean close).
func wantClosed(t *testing.T, err error, cause *sim.Error) {
	t.Helper()
	if !errors.Is(err, sim.ErrClosed) {
		t.Fatalf("want an error wrapping sim.ErrClosed, got %v", err)
	}
	var perr *sim.Error
	got := errors.As(err, &perr)
	switch {
	case cause == nil && got:
		t.Errorf("clean close, but the error chain holds %v", perr)
	case cause != nil && !got:
		t.Errorf("want the cause %v in the error chain of %v", cause, err)
	case cause != nil && perr != cause:
		t.Errorf("cause = %v, want %v", perr, cause)
	}
}

// asError returns the protocol error in err's chain, or nil.
func asError(err error) *sim.Error {
	var perr *sim.Error
	if errors.As(err, &perr) {
		return perr
	}
	return nil
}

// quorumQueue declares a quorum queue.
var quorumQueue = sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "quorum"}}
