package sim_test

import (
	"fmt"
	"testing"

	"github.com/amqpsim/amqpsim/sim"
)

// Transactions' conversations are library scenarios (scenarios/library/
// tx-*.txt); one rule stays here, where the simulator differs.

// tx.commit settles a held settlement from its highest tag down
// (rabbit_channel's commit: lists:reverse(lists:sort(Acked))), so a
// multiple nack without requeue of m1..m3 dead-letters m3 first: the
// dead-letter queue shows the order. Outside a transaction the same nack
// dead-letters in tag order. Unlike RabbitMQ: recorded on 3.10.8, 4.0.5
// and 4.3.6, a commit dead-letters such a nack in tag order too (the
// coordinator has the recording); tx-settlements-at-commit.txt leaves the
// case out until the simulator follows.
func TestTxCommitSettlesFromTheHighestTag(t *testing.T) {
	for _, tx := range []bool{true, false} {
		e := newEnv(t)
		e.declare("dlq", sim.QueueOptions{})
		e.declare("q", sim.QueueOptions{Args: sim.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "dlq"}})
		e.publish("q", "m1", "m2", "m3")
		if tx {
			e.must(e.ch.Tx())
		}
		for range 3 {
			if _, ok, err := e.ch.Get("q", false); !ok || err != nil {
				t.Fatalf("get: %t %v", ok, err)
			}
		}
		e.must(e.ch.Nack(3, true, false))
		want := []string{"m1", "m2", "m3"}
		if tx {
			e.must(e.ch.TxCommit())
			want = []string{"m3", "m2", "m1"}
		}
		diff(t, fmt.Sprintf("dead-lettered (tx %v)", tx), want, e.ready("dlq"))
	}
}
