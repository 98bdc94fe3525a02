package amqptest_test

import (
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/amqpsim/amqpsim/amqptest"
)

// Transactions through amqp091-go: commit delivers the held publishes and
// returns a mandatory one that reached no queue before tx.commit-ok;
// rollback discards them. Every wait is on a reply the client blocks for.
func TestClientTxCommitAndRollback(t *testing.T) {
	srv := amqptest.NewServer(t)
	ch := channel(t, dial(t, srv))
	declare(t, ch, "q")
	returns := ch.NotifyReturn(make(chan amqp.Return, 1))
	if err := ch.Tx(); err != nil {
		t.Fatal(err)
	}
	publish(t, ch, "q", "m1")
	if err := ch.Publish("", "nosuchq", true, false, amqp.Publishing{Body: []byte("lost")}); err != nil {
		t.Fatal(err)
	}
	if err := ch.TxCommit(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-returns: // dispatched by the client before it read commit-ok
		if string(r.Body) != "lost" || r.ReplyCode != 312 {
			t.Errorf("return %d %q", r.ReplyCode, r.Body)
		}
	default:
		t.Error("no basic.return before tx.commit-ok")
	}
	publish(t, ch, "q", "m2")
	if err := ch.TxRollback(); err != nil {
		t.Fatal(err)
	}
	if st, err := srv.Broker().QueueStats("/", "q"); err != nil || st.Ready != 1 {
		t.Errorf("ready = %d (%v), want m1 only", st.Ready, err)
	}
}
