package amqptest_test

import (
	"testing"
	"testing/synctest"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
	"github.com/amqpsim/amqpsim/sim"
)

// TestAlarmBlocksPublishers follows what RabbitMQ 3.10.8 did with
// "rabbitmqctl set_vm_memory_high_watermark 0.0000001" and
// "set_disk_free_limit 1000000GB" (measured with amqp091-go): nobody
// hears of the alarm until they publish; a publisher is then told
// connection.blocked with the reason and its publish (with a body) and
// every later frame wait; an empty-body publish goes through; consumers go
// on; the second alarm and clearing one of two change nothing; clearing
// the last unblocks everyone blocked and the held frames are applied.
func TestAlarmBlocksPublishers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		b := srv.Broker()
		type client struct {
			conn    *amqp.Connection
			ch      *amqp.Channel
			blocked chan amqp.Blocking
		}
		dial := func() client {
			conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { closeConn(t, conn) })
			ch, err := conn.Channel()
			if err != nil {
				t.Fatal(err)
			}
			return client{conn, ch, conn.NotifyBlocked(make(chan amqp.Blocking, 4))}
		}
		noBlocking := func(name string, c client) {
			t.Helper()
			select {
			case bl := <-c.blocked:
				t.Errorf("%s got %+v", name, bl)
			default:
			}
		}
		pub, con := dial(), dial()
		con.ch.QueueDeclare("jobs", false, false, false, false, nil)
		ds, _ := con.ch.Consume("jobs", "", true, false, false, false, nil)

		b.SetAlarm(sim.AlarmMemory, true)
		synctest.Wait()
		noBlocking("publisher before publishing", pub)
		noBlocking("consumer", con)

		pub.ch.Publish("", "jobs", false, false, amqp.Publishing{Body: []byte("during")})
		synctest.Wait()
		if bl := recv(t, pub.blocked); !bl.Active || bl.Reason != "low on memory" {
			t.Errorf("publisher got %+v, want blocked, low on memory", bl)
		}
		if st, _ := b.QueueStats("/", "jobs"); st.Ready+st.Unacked != 0 || len(ds) != 0 {
			t.Errorf("the held publish arrived: %+v", st)
		}
		declared := make(chan error, 1)
		go func() {
			_, err := pub.ch.QueueDeclarePassive("jobs", false, false, false, false, nil)
			declared <- err
		}()
		time.Sleep(time.Minute) // heartbeats do not end a blocked connection
		synctest.Wait()
		if len(declared) != 0 {
			t.Error("a blocked connection's next method was applied")
		}

		empty := dial()
		empty.ch.Publish("", "jobs", false, false, amqp.Publishing{})
		synctest.Wait()
		if d := recv(t, ds); len(d.Body) != 0 {
			t.Errorf("consumer got %q, want the empty publish", d.Body)
		}
		if bl := recv(t, empty.blocked); bl.Reason != "low on memory" {
			t.Errorf("empty publisher got %+v", bl)
		}

		b.SetAlarm(sim.AlarmDisk, true)
		p2 := dial()
		p2.ch.Publish("", "jobs", false, false, amqp.Publishing{Body: []byte("p2")})
		synctest.Wait()
		if bl := recv(t, p2.blocked); bl.Reason != "low on disk & memory" {
			t.Errorf("second publisher got %+v", bl)
		}
		b.SetAlarm(sim.AlarmMemory, false)
		synctest.Wait()
		noBlocking("publisher with one alarm left", pub)
		if !b.Connections()[0].Blocked() {
			t.Error("unblocked with the disk alarm still raised")
		}

		b.SetAlarm(sim.AlarmDisk, false)
		synctest.Wait()
		for name, c := range map[string]client{"publisher": pub, "empty publisher": empty, "second publisher": p2} {
			if bl := recv(t, c.blocked); bl.Active {
				t.Errorf("%s got %+v, want unblocked", name, bl)
			}
		}
		noBlocking("consumer", con)
		if err := recv(t, declared); err != nil {
			t.Errorf("held passive declare: %v", err)
		}
		got := map[string]bool{}
		for range 2 {
			got[string(recv(t, ds).Body)] = true
		}
		if !got["during"] || !got["p2"] {
			t.Errorf("after the alarm the consumer got %v", got)
		}
	})
}

// TestAlarmConfirmsWhatWentThrough: an empty-body publish goes through an
// alarm and is confirmed while the publish after it is held.
func TestAlarmConfirmsWhatWentThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := amqptest.NewServer(t)
		conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial})
		if err != nil {
			t.Fatal(err)
		}
		defer closeConn(t, conn)
		ch, _ := conn.Channel()
		ch.QueueDeclare("jobs", false, false, false, false, nil)
		ch.Confirm(false)
		srv.Broker().SetAlarm(sim.AlarmMemory, true)
		first, _ := ch.PublishWithDeferredConfirm("", "jobs", false, false, amqp.Publishing{})
		second, _ := ch.PublishWithDeferredConfirm("", "jobs", false, false, amqp.Publishing{Body: []byte("held")})
		synctest.Wait()
		select {
		case <-first.Done():
			if !first.Acked() {
				t.Error("the empty publish was nacked")
			}
		default:
			t.Error("the empty publish is not confirmed while the next one is held")
		}
		select {
		case <-second.Done():
			t.Error("the held publish was confirmed during the alarm")
		default:
		}
		srv.Broker().SetAlarm(sim.AlarmMemory, false)
		if !confirmed(t, second) {
			t.Error("the held publish was nacked")
		}
		srv.CheckQueue(t, "jobs", "", "held")
	})
}
