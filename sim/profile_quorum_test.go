package sim_test

import (
	"fmt"
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// The rules of this file were measured on RabbitMQ 4.0.5 and 4.3.6
// (scenarios/library, each file recorded on 3.10.8 too); sim/profile.go
// sets them in one block of Version.Profile.

// 4.0+ takes a declaration without x-queue-type as one of type classic
// before it compares, so a mismatch names both types
// (quorum-redeclare.txt, recorded on 4.0.5 and 4.3.6; 3.10 wrote "received
// none but current is the value 'quorum' of type 'longstr'").
func TestImplicitQueueTypeText40(t *testing.T) {
	const pre = "PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue '%s' in vhost '/': "
	for _, tc := range []struct {
		v                   sim.Version
		toQuorum, toClassic string
	}{
		{sim.V3_10, "received none but current is the value 'quorum' of type 'longstr'", "received the value 'quorum' of type 'longstr' but current is none"},
		{sim.V4_0, "received 'classic' but current is 'quorum'", "received 'quorum' but current is 'classic'"},
		{sim.V4_3, "received 'classic' but current is 'quorum'", "received 'quorum' but current is 'classic'"},
	} {
		e := newEnvOn(t, tc.v)
		e.declare("q", quorumQueue)
		_, err := e.ch.QueueDeclare("q", sim.QueueOptions{Durable: true})
		wantErr(t, err, 406, fmt.Sprintf(pre, "q")+tc.toQuorum, protocol.QueueDeclare)

		ch := e.channel(e.conn)
		e.ch = ch
		e.declare("c", sim.QueueOptions{Durable: true})
		_, err = ch.QueueDeclare("c", quorumQueue)
		wantErr(t, err, 406, fmt.Sprintf(pre, "c")+tc.toClassic, protocol.QueueDeclare)

		// classic named or not is the same type, and so is quorum.
		ch = e.channel(e.conn)
		if _, err := ch.QueueDeclare("c", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "classic"}}); err != nil {
			t.Errorf("%v: classic redeclared as x-queue-type=classic: %v", tc.v, err)
		}
		if _, err := ch.QueueDeclare("q", quorumQueue); err != nil {
			t.Errorf("%v: quorum redeclared: %v", tc.v, err)
		}
	}
}
