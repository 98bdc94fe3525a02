package amqptest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// recorder is a testing.TB that keeps the errors instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestCheckHelpers(t *testing.T) {
	srv := amqptest.NewServer(t)
	b := srv.Broker()
	ch, _ := b.Connect("app").Channel()
	ch.QueueDeclare("jobs", sim.QueueOptions{})
	ch.Qos(1, 0, false) // a prefetch of 1, on any release
	ch.Consume("jobs", sim.ConsumeOptions{})
	for _, body := range []string{"a", "b", "c"} {
		b.Publish("/", "", "jobs", sim.Message{Properties: protocol.Properties{Headers: sim.Table{"n": int32(len(body))}}, Body: []byte(body)})
	}

	// Agreeing checks report nothing.
	r := &recorder{TB: t}
	srv.CheckQueue(r, "jobs", "b", "c")
	srv.CheckCounts(r, "jobs", amqptest.QueueCounts{Ready: 2, Unacked: 1, Consumers: 1})
	srv.CheckMessages(r, "jobs", []sim.Message{
		{Properties: protocol.Properties{Headers: sim.Table{"n": int32(1)}}, Body: []byte("b")},
		{Properties: protocol.Properties{Headers: sim.Table{"n": int32(1)}}, Body: []byte("c")},
	})
	if len(r.errs) != 0 {
		t.Fatalf("agreeing checks failed: %q", r.errs)
	}

	// Each disagreement fails with a diff that names the difference.
	for _, tc := range []struct {
		name  string
		check func(testing.TB)
		want  string
	}{
		{"bodies", func(tb testing.TB) { srv.CheckQueue(tb, "jobs", "b") }, `"c"`},
		{"counts", func(tb testing.TB) { srv.CheckCounts(tb, "jobs", amqptest.QueueCounts{Ready: 2, Consumers: 1}) }, "Unacked"},
		{"headers", func(tb testing.TB) {
			srv.CheckMessages(tb, "jobs", []sim.Message{
				{Properties: protocol.Properties{Headers: sim.Table{"n": int32(2)}}, Body: []byte("b")},
				{Properties: protocol.Properties{Headers: sim.Table{"n": int32(1)}}, Body: []byte("c")},
			})
		}, `"n"`},
		{"missing queue", func(tb testing.TB) { srv.CheckQueue(tb, "nope") }, `no such queue "nope"`},
	} {
		r := &recorder{TB: t}
		tc.check(r)
		if len(r.errs) != 1 || !strings.Contains(r.errs[0], tc.want) {
			t.Errorf("%s: errors %q, want one containing %q", tc.name, r.errs, tc.want)
		}
	}
}
