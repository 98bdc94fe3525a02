package amqptest_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"pgregory.net/rapid"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/sim"
)

func TestScheduleString(t *testing.T) {
	s := amqptest.Schedule{
		{AfterDeliveries: 0, Kind: amqptest.FaultDrop},
		{AfterDeliveries: 3, Kind: amqptest.FaultRestart, Downtime: 2 * time.Second},
		{AfterDeliveries: 5, Kind: amqptest.FaultForceClose},
		{AfterDeliveries: 6, Kind: amqptest.FaultCloseChannel},
		{AfterDeliveries: 7, Kind: amqptest.FaultConsumerTimeout},
		{AfterDeliveries: 8, Kind: amqptest.FaultAlarm, Alarm: sim.AlarmMemory, For: time.Second},
		{AfterDeliveries: 9, Kind: amqptest.FaultNackPublishes, Count: 2},
	}
	want := "at the start: drop every connection\n" +
		"after 3 deliveries: restart the broker, down for 2s\n" +
		"after 5 deliveries: force-close every connection\n" +
		"after 6 deliveries: close the channel of delivery 6 (406)\n" +
		"after 7 deliveries: time out the consumer of delivery 7 (406)\n" +
		"after 8 deliveries: memory alarm for 1s\n" +
		"after 9 deliveries: nack the next 2 publishes"
	if got := s.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	nodes := amqptest.Schedule{
		{AfterDeliveries: 1, Kind: amqptest.FaultStopNode, Node: 1},
		{AfterDeliveries: 2, Kind: amqptest.FaultKillNode, Node: 2, Downtime: 3 * time.Second},
		{AfterDeliveries: 4, Kind: amqptest.FaultPartition, Node: 3},
		{AfterDeliveries: 5, Kind: amqptest.FaultPartition, Node: 1, Downtime: time.Second},
	}
	want = "after 1 delivery: stop node 1 and start it again at once\n" +
		"after 2 deliveries: kill node 2, start it again 3s later\n" +
		"after 4 deliveries: cut node 3 off and heal at once\n" +
		"after 5 deliveries: cut node 1 off, heal 1s later"
	if got := nodes.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := (amqptest.Schedule{}).String(); got != "no faults" {
		t.Errorf("empty schedule prints %q", got)
	}
}

// TestScheduleGoString: rapid logs a drawn schedule with %#v, which
// prints a literal a test can pin.
func TestScheduleGoString(t *testing.T) {
	s := amqptest.Schedule{
		{AfterDeliveries: 1, Kind: amqptest.FaultCloseChannel},
		{AfterDeliveries: 3, Kind: amqptest.FaultRestart, Downtime: 2 * time.Second},
		{AfterDeliveries: 8, Kind: amqptest.FaultAlarm, Alarm: sim.AlarmMemory | sim.AlarmDisk, For: 1500 * time.Millisecond},
		{AfterDeliveries: 9, Kind: amqptest.FaultNackPublishes, Count: 2},
	}
	want := "amqptest.Schedule{{AfterDeliveries: 1, Kind: amqptest.FaultCloseChannel}, " +
		"{AfterDeliveries: 3, Kind: amqptest.FaultRestart, Downtime: 2 * time.Second}, " +
		"{AfterDeliveries: 8, Kind: amqptest.FaultAlarm, Alarm: sim.AlarmDisk | sim.AlarmMemory, For: 1500 * time.Millisecond}, " +
		"{AfterDeliveries: 9, Kind: amqptest.FaultNackPublishes, Count: 2}}"
	if got := fmt.Sprintf("%#v", s); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := fmt.Sprintf("%#v", amqptest.Schedule(nil)); got != "amqptest.Schedule{}" {
		t.Errorf("no faults: %s", got)
	}
	if got := fmt.Sprintf("%#v", amqptest.Fault{Kind: 99}); got != "amqptest.Fault{AfterDeliveries: 0, Kind: amqptest.FaultKind(99)}" {
		t.Errorf("an unknown kind: %s", got)
	}
}

func TestSchedulesDrawsSortedBoundedFaults(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := amqptest.Schedules(4, 20, amqptest.FaultDrop, amqptest.FaultRestart).Draw(rt, "schedule")
		if len(s) > 4 {
			rt.Fatalf("%d faults, at most 4", len(s))
		}
		for i, f := range s {
			if f.AfterDeliveries < 0 || f.AfterDeliveries > 20 {
				rt.Fatalf("trigger %d out of [0, 20]", f.AfterDeliveries)
			}
			if i > 0 && f.AfterDeliveries < s[i-1].AfterDeliveries {
				rt.Fatalf("not sorted:\n%v", s)
			}
			if f.Kind != amqptest.FaultDrop && f.Kind != amqptest.FaultRestart {
				rt.Fatalf("kind %v not asked for", f.Kind)
			}
			if f.Kind != amqptest.FaultRestart && f.Downtime != 0 {
				rt.Fatalf("downtime on %v", f)
			}
		}
	})
}

// An unknown kind is refused when it is injected: at once after 0
// deliveries, by the wait after more.
func TestStartScheduleUnknownKind(t *testing.T) {
	srv := amqptest.NewServer(t)
	if _, err := srv.StartSchedule(amqptest.Schedule{{Kind: 99}}); err == nil || !strings.Contains(err.Error(), "unknown fault kind") {
		t.Errorf("unknown fault kind after 0 deliveries: %v, want refused", err)
	}
	wait, err := srv.StartSchedule(amqptest.Schedule{{AfterDeliveries: 1, Kind: 99}})
	if err != nil {
		t.Fatal(err)
	}
	b := srv.Broker()
	ch, err := b.Connect("getter").Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("q", sim.QueueOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish("/", "", "q", sim.Message{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ch.Get("q", true); err != nil {
		t.Fatal(err)
	}
	if err := wait(); err == nil || !strings.Contains(err.Error(), "unknown fault kind") {
		t.Errorf("unknown fault kind after 1 delivery: %v, want refused", err)
	}
}

// TestStartSchedule: each fault lands once its trigger is reached, as the
// client sees it, and a trigger never reached is an error after the wait
// timeout (fake time in the bubble).
func TestStartSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		b := srv.Broker()
		conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial, Properties: amqp.Table{"connection_name": "app"}})
		if err != nil {
			t.Fatal(err)
		}
		closed := conn.NotifyClose(make(chan *amqp.Error, 1))
		ch, _ := conn.Channel()
		ch.QueueDeclare("jobs", false, false, false, false, nil)
		for range 3 {
			b.Publish("/", "", "jobs", sim.Message{Body: []byte("m")})
		}
		wait, err := srv.StartSchedule(amqptest.Schedule{{AfterDeliveries: 2, Kind: amqptest.FaultForceClose}})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- wait() }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("returned before any delivery: %v", err)
		default:
		}
		ch.Get("jobs", false)
		synctest.Wait()
		if len(closed) != 0 {
			t.Fatal("closed after one delivery")
		}
		ch.Get("jobs", false)
		if err := recv(t, done); err != nil {
			t.Fatal(err)
		}
		if e := recv(t, closed); e == nil || e.Code != 320 {
			t.Fatalf("closed with %v, want 320", e)
		}

		if wait, err = srv.StartSchedule(amqptest.Schedule{{AfterDeliveries: 10, Kind: amqptest.FaultDrop}}); err != nil {
			t.Fatal(err)
		}
		// Triggers are not clamped: the wait fails, and says why.
		if err := wait(); err == nil || !strings.Contains(err.Error(), "only 2 deliveries: the code under test stopped consuming, "+
			"or the trigger lies beyond the deliveries the run makes (Schedules' maxDeliveries must be at most those)") {
			t.Fatalf("unreached trigger: %v", err)
		}
	})
}

// TestStartScheduleExact: a close lands right behind its delivery, though
// one consume against a deep queue pushes many at once; the trace shows
// no delivery between the trigger's and the close.
func TestStartScheduleExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		b := srv.Broker()
		conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial})
		if err != nil {
			t.Fatal(err)
		}
		ch, _ := conn.Channel()
		closed := ch.NotifyClose(make(chan *amqp.Error, 1))
		ch.QueueDeclare("jobs", false, false, false, false, nil)
		for range 10 {
			b.Publish("/", "", "jobs", sim.Message{Body: []byte("m")})
		}
		wait, err := srv.StartSchedule(amqptest.Schedule{{AfterDeliveries: 4, Kind: amqptest.FaultCloseChannel}})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- wait() }()
		synctest.Wait()
		ch.Consume("jobs", "A", false, false, false, false, nil)
		if err := recv(t, done); err != nil {
			t.Fatal(err)
		}
		if e := recv(t, closed); e == nil || e.Code != 406 || e.Reason != "PRECONDITION_FAILED - fault injected by amqptest" {
			t.Fatalf("closed with %v", e)
		}
		var pushes []string
		for _, e := range b.Trace() {
			if e.Kind == sim.EventPush && e.Channel == 1 {
				pushes = append(pushes, e.Method.String())
			}
		}
		want := []string{"basic.deliver", "basic.deliver", "basic.deliver", "basic.deliver", "channel.close"}
		if !slices.Equal(pushes, want) {
			t.Errorf("pushes %v, want %v", pushes, want)
		}
		srv.WaitQueue(t, "jobs", func(s sim.QueueStats) bool { return s.Ready == 10 })
	})
}

// TestStartScheduleAlarmAndNacks: an alarm with an end and injected
// nacks, drawn as faults.
func TestStartScheduleAlarmAndNacks(t *testing.T) {
	srv := amqptest.NewServer(t)
	b := srv.Broker()
	wait, err := srv.StartSchedule(amqptest.Schedule{
		{Kind: amqptest.FaultAlarm, Alarm: sim.AlarmDisk, For: 2 * time.Second},
		{Kind: amqptest.FaultNackPublishes, Count: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Due after 0 deliveries: raised by StartSchedule, before the code
	// under test runs, not whenever the wait gets to it.
	if b.Alarms() != sim.AlarmDisk {
		t.Fatalf("alarms %v once the schedule started, want disk", b.Alarms())
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if b.Alarms() != sim.AlarmDisk {
		t.Fatalf("alarms %v, want disk", b.Alarms())
	}
	b.Advance(2 * time.Second)
	if b.Alarms() != 0 {
		t.Errorf("alarm still raised after its 2s")
	}
	ch, _ := b.Connect("pub").Channel()
	ch.QueueDeclare("q", sim.QueueOptions{})
	ch.Confirm()
	ch.Publish("", "q", sim.PublishOptions{}, sim.Message{Body: []byte("x")})
	if cs := ch.Confirms(); len(cs) != 1 || !cs[0].Nack {
		t.Errorf("confirms %+v, want one nack", cs)
	}
	if _, err := srv.StartSchedule(amqptest.Schedule{{Kind: amqptest.FaultCloseChannel}}); err == nil {
		t.Error("a channel close with no delivery accepted")
	}
}

// TestStartScheduleLate: a close armed after its delivery has passed
// lands right behind the next one.
func TestStartScheduleLate(t *testing.T) {
	srv := amqptest.NewServer(t)
	b := srv.Broker()
	ch, _ := b.Connect("app").Channel()
	ch.QueueDeclare("q", sim.QueueOptions{})
	for range 3 {
		b.Publish("/", "", "q", sim.Message{Body: []byte("m")})
	}
	ch.Get("q", false)
	ch.Get("q", false)
	wait, err := srv.StartSchedule(amqptest.Schedule{{AfterDeliveries: 1, Kind: amqptest.FaultCloseChannel}})
	if err != nil {
		t.Fatal(err)
	}
	if ch.Err() != nil {
		t.Fatal("closed before the next delivery")
	}
	ch.Get("q", false)
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if ch.Err() == nil {
		t.Error("the channel of the next delivery is open")
	}
	if st, _ := b.QueueStats("/", "q"); st.Ready != 3 {
		t.Errorf("ready %d, want the three gets requeued", st.Ready)
	}
}
