package amqptest_test

import (
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
	}
	want := "after 0 deliveries: drop every connection\n" +
		"after 3 deliveries: restart the broker (down 2s)\n" +
		"after 5 deliveries: force-close every connection"
	if got := s.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := (amqptest.Schedule{}).String(); got != "no faults" {
		t.Errorf("empty schedule prints %q", got)
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

func TestInjectUnknownKind(t *testing.T) {
	srv := amqptest.NewServer(t)
	if err := srv.Inject(amqptest.Fault{Kind: 99}); err == nil {
		t.Error("unknown fault kind accepted")
	}
}

// TestRunSchedule: each fault lands once its trigger is reached, as the
// client sees it, and a trigger never reached is an error after the wait
// timeout (fake time in the bubble).
func TestRunSchedule(t *testing.T) {
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
		done := make(chan error, 1)
		go func() {
			done <- srv.RunSchedule(amqptest.Schedule{{AfterDeliveries: 2, Kind: amqptest.FaultForceClose}})
		}()
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
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if e := <-closed; e == nil || e.Code != 320 {
			t.Fatalf("closed with %v, want 320", e)
		}

		err = srv.RunSchedule(amqptest.Schedule{{AfterDeliveries: 10, Kind: amqptest.FaultDrop}})
		if err == nil || !strings.Contains(err.Error(), "only 2 deliveries") {
			t.Fatalf("unreached trigger: %v", err)
		}
	})
}
