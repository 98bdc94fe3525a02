package sim_test

import (
	"testing"

	"github.com/amqpsim/amqpsim/sim"
)

// Dispatch's conversations are library scenarios (scenarios/library/
// dispatch-*.txt, recorded on RabbitMQ). One rule stays here: 4.0.5 and
// 4.3.6 hand the ready messages to the next single active consumer at
// once, as the simulator does on every release, but 3.10.8 hands it
// nothing and its queue process crashes at the next publish
// (dispatch-single-active-consumer.txt), so no library file can hold it.

// basic.cancel dispatches the queue: cancelling the single active consumer
// makes the next one active, and it gets the ready messages at once.
func TestCancelDispatchesToTheNextSingleActiveConsumer(t *testing.T) {
	e := newEnv(t)
	e.declare("q", sim.QueueOptions{Args: sim.Table{"x-single-active-consumer": true}})
	e.qos(e.ch, 1, false)
	a := e.consume(e.ch, "q", "a", sim.ConsumeOptions{})
	ch2 := e.channel(e.conn)
	b := e.consume(ch2, "q", "b", sim.ConsumeOptions{})
	e.publish("q", "m1", "m2")
	diff(t, "a", []string{"m1"}, bodies(a.Deliveries()))
	e.must(e.ch.Cancel("a"))
	diff(t, "b after the cancel", []string{"m2"}, bodies(b.Deliveries()))
}
