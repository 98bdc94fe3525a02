package sim_test

import (
	"regexp"
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// queue.declare's conversations are library scenarios (scenarios/library/
// declare-*.txt, exclusive-queue.txt, queue-delete-*.txt and others,
// recorded on RabbitMQ); the scenarios normalise generated names, so the
// name's form is checked here.

// An empty name makes the broker generate "amq.gen-" and 22 base64url characters.
func TestDeclareServerNamed(t *testing.T) {
	e := newEnv(t)
	info, err := e.ch.QueueDeclare("", sim.QueueOptions{Exclusive: true})
	e.must(err)
	if !regexp.MustCompile(`^amq\.gen-[A-Za-z0-9_-]{22}$`).MatchString(info.Name) {
		t.Errorf("name %q", info.Name)
	}
	if !e.exists(info.Name) {
		t.Error("generated queue missing")
	}
	// By name it is passive-declarable, but a non-passive redeclare hits the reserved prefix (checked against RabbitMQ 3.10.8).
	if _, err := e.ch.QueueDeclare(info.Name, sim.QueueOptions{Passive: true}); err != nil {
		t.Fatal(err)
	}
	_, err = e.ch.QueueDeclare(info.Name, sim.QueueOptions{Exclusive: true})
	wantErr(t, err, 403, "ACCESS_REFUSED - queue name '"+info.Name+"' contains reserved prefix 'amq.*'", protocol.QueueDeclare)
}
