package scenarios_test

import (
	"strings"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/scenarios"
	"github.com/amqpsim/amqpsim/sim"
)

// TestFromTraceReplays: a run written from its trace parses, and replays
// on a fresh simulator to the results it shows.
func TestFromTraceReplays(t *testing.T) {
	b := sim.New(sim.Config{Seed: 3})
	conn := b.Connect("app")
	ch, _ := conn.Channel()
	// A quorum queue: from 4.3 only those time deliveries out, and
	// themselves.
	ch.QueueDeclare("jobs", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "quorum", "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "failed"}})
	ch.QueueDeclare("failed", sim.QueueOptions{})
	ch.Qos(2, 0, false)
	c, _ := ch.Consume("jobs", sim.ConsumeOptions{Tag: "A"})
	for _, body := range []string{"m1", "m2", "m3"} {
		b.Publish("/", "", "jobs", sim.Message{Body: []byte(body), Properties: protocol.Properties{DeliveryMode: 2}})
	}
	d, _ := c.Next()
	ch.Ack(d.DeliveryTag, false)
	d, _ = c.Next()
	ch.Reject(d.DeliveryTag, false) // dead-lettered
	b.Advance(31 * time.Minute)     // the queue times m3 out and cancels A
	ch2, _ := conn.Channel()
	ch2.Confirm()
	ch2.Publish("", "nowhere", sim.PublishOptions{Mandatory: true}, sim.Message{Body: []byte("lost")})
	ch2.Get("jobs", false)
	conn.Close()

	s, res, err := scenarios.FromTrace(b.Trace(), scenarios.TraceOptions{Name: "worker-run", Title: "a test's run", Seed: 3, Final: b})
	if err != nil {
		t.Fatal(err)
	}
	checkWritten(t, s, "worker-run.txt", []string{
		"# a test's run\nsource simulator trace\nseed 3\nrabbitmq " + sim.DefaultVersion.String() + "\n",
		"conn app\nchannel app.app-ch1\n",
		"declare-queue app-ch1 jobs durable x-dead-letter-exchange=\"\" x-dead-letter-routing-key=failed x-queue-type=quorum\n  declare-ok ready=0 consumers=0\n",
		"publish direct-ch1 jobs m1 persistent\n  A <- m1 #1\n",
		"advance 30m0s\n  app-ch1 <- basic.cancel A\n",
		"app-ch2 <- basic.return lost 312 NO_ROUTE exchange=\"\" key=nowhere\n  app-ch2 <- confirm ack 1\n",
		"get app-ch2 jobs\n  get-ok m3 #1 redelivered left=0\n",
		"queue failed\n  failed ready=1 unacked=0 consumers=0\n",
	})
	if svg := string(res.SVG()); !strings.Contains(svg, "<svg") || !strings.Contains(svg, "m1") {
		t.Errorf("no diagram: %.200s", svg)
	}
}

// A run on another release than the default names it, and replays there:
// on 3.10 a global qos is one window for the channel's two consumers.
func TestFromTraceNamesTheRelease(t *testing.T) {
	b := sim.New(sim.Config{Version: sim.V3_10})
	ch, _ := b.Connect("app").Channel()
	ch.QueueDeclare("jobs", sim.QueueOptions{})
	ch.Qos(1, 0, true)
	ch.Consume("jobs", sim.ConsumeOptions{Tag: "A"})
	ch.Consume("jobs", sim.ConsumeOptions{Tag: "B"})
	b.Publish("/", "", "jobs", sim.Message{Body: []byte("m1")})
	b.Publish("/", "", "jobs", sim.Message{Body: []byte("m2")})

	s, _, err := scenarios.FromTrace(b.Trace(), scenarios.TraceOptions{Final: b})
	if err != nil {
		t.Fatal(err)
	}
	text := string(s.Format())
	if !strings.Contains(text, "source simulator trace\nrabbitmq 3.10\n") || !strings.Contains(text, "jobs ready=1 unacked=1 consumers=2") {
		t.Errorf("the file does not name 3.10 or show its one window:\n%s", text)
	}
	back, err := scenarios.Parse("run.txt", s.Format())
	if err != nil {
		t.Fatal(err)
	}
	if back.Version != sim.V3_10 {
		t.Errorf("the file replays on %v", back.Version)
	}
	scenarios.Check(t, back)
}

// TestFromTraceCoalescedConfirms: a connection whose shell reads frames
// in batches (the wire server) gets one basic.ack multiple for the
// publishes of one read. The report writes each publish's confirm under
// the publish, where a replay confirms it, with a comment where the
// broker sent them, so that the fault-free run replays to its results:
// written as it happened (ack 1-4 under the last publish), the four
// publishes of distinct message ids, which stay four steps, diverged.
// A nack injected among them keeps its verdict.
func TestFromTraceCoalescedConfirms(t *testing.T) {
	b := sim.New(sim.Config{})
	conn, err := b.Dial(sim.ConnectOptions{Name: "pub", Shell: sim.ShellOptions{Batched: true}})
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := conn.Channel()
	ch.QueueDeclare("jobs", sim.QueueOptions{})
	ch.Confirm()
	conn.Idle()
	publish := func(ids ...string) {
		for _, id := range ids {
			ch.Publish("", "jobs", sim.PublishOptions{}, sim.Message{Body: []byte("m"), Properties: protocol.Properties{MessageID: id}})
		}
		conn.Idle() // the reader has applied what it read: the confirms go out together
	}
	publish("a", "b", "c", "d")
	publish("e")
	if cs := ch.Confirms(); len(cs) != 2 || !cs[0].Multiple || cs[0].DeliveryTag != 4 {
		t.Fatalf("confirms %+v, want ack 4 multiple, then ack 5", cs)
	}

	s, _, err := scenarios.FromTrace(b.Trace(), scenarios.TraceOptions{Name: "coalesced", Final: b})
	if err != nil {
		t.Fatal(err)
	}
	text := string(s.Format())
	for _, want := range []string{
		"publish pub-ch1 jobs m message-id=a\n  pub-ch1 <- confirm ack 1\npublish pub-ch1 jobs m message-id=b\n  pub-ch1 <- confirm ack 2\n",
		"# after this step the broker confirmed publishes 1-4 of pub-ch1, in one basic.ack multiple=true (it confirms together the publishes it reads together); a replay confirms each under its publish, where it is written\npublish pub-ch1 jobs m message-id=d\n  pub-ch1 <- confirm ack 4\n",
		"publish pub-ch1 jobs m message-id=e\n  pub-ch1 <- confirm ack 5\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the file lacks\n%s\nin\n%s", want, text)
		}
	}
	back, err := scenarios.Parse("coalesced.txt", s.Format())
	if err != nil {
		t.Fatalf("the written file does not parse: %v\n%s", err, text)
	}
	scenarios.Check(t, back)

	// A nack injected among the publishes of one read stays a nack.
	b.NackPublishes(1)
	publish("f", "g")
	s, _, err = scenarios.FromTrace(b.Trace(), scenarios.TraceOptions{Name: "coalesced"})
	if err != nil {
		t.Fatal(err)
	}
	text = string(s.Format())
	if want := "publish pub-ch1 jobs m message-id=f\n  pub-ch1 <- confirm nack 6\n" +
		"# after this step the broker confirmed publish 6 of pub-ch1, in one basic.nack multiple=true (it confirms together the publishes it reads together); a replay confirms each under its publish, where it is written\n" +
		"publish pub-ch1 jobs m message-id=g\n  pub-ch1 <- confirm ack 7\n"; !strings.Contains(text, want) {
		t.Errorf("the file lacks\n%s\nin\n%s", want, text)
	}
}

// TestFromTraceCluster: a run on a cluster writes the cluster directive,
// each connection's node and the node faults, and replays as it ran.
func TestFromTraceCluster(t *testing.T) {
	b := sim.New(sim.Config{Nodes: 3})
	on1, err := b.Dial(sim.ConnectOptions{Name: "app", Node: 1})
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := on1.Channel()
	if _, err := ch.QueueDeclare("cq", sim.QueueOptions{Durable: true}); err != nil {
		t.Fatal(err)
	}
	on2, err := b.Dial(sim.ConnectOptions{Name: "worker", Node: 2})
	if err != nil {
		t.Fatal(err)
	}
	ch2, _ := on2.Channel()
	if _, err := ch2.Consume("cq", sim.ConsumeOptions{Tag: "W"}); err != nil {
		t.Fatal(err)
	}
	if err := b.KillNode(1); err != nil {
		t.Fatal(err)
	}
	if err := b.StartNode(1); err != nil {
		t.Fatal(err)
	}
	if err := b.StopNode(2); err != nil {
		t.Fatal(err)
	}
	s, _, err := scenarios.FromTrace(b.Trace(), scenarios.TraceOptions{Name: "cluster-run", Final: b})
	if err != nil {
		t.Fatal(err)
	}
	checkWritten(t, s, "cluster-run.txt", []string{
		"cluster 3 rabbit@node1 rabbit@node2 rabbit@node3\n",
		"conn worker node=2\n",
		"kill-node 1\n  worker-ch1 <- basic.cancel W\n  app <- connection dropped\n",
		"start-node 1\nstop-node 2\n  worker <- connection.close 320 (none): CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'\n",
	})
}

// checkWritten checks that the file FromTrace wrote has each of wants,
// parses back under name and replays as the run went.
func checkWritten(t *testing.T, s *scenarios.Scenario, name string, wants []string) {
	t.Helper()
	text := string(s.Format())
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("the file lacks\n%s\nin\n%s", want, text)
		}
	}
	back, err := scenarios.Parse(name, s.Format())
	if err != nil {
		t.Fatalf("the written file does not parse: %v\n%s", err, text)
	}
	replayed, err := scenarios.Replay(back)
	if err != nil {
		t.Fatal(err)
	}
	if diff := replayed.Diff(); diff != "" {
		t.Errorf("the replay differs from the run:\n%s\n%s", diff, text)
	}
}
