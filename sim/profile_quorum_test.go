package sim_test

import (
	"testing"

	"github.com/amqpsim/amqpsim/sim"
)

// What a quorum queue's x-max-length-bytes counts is pinned by
// scenarios/library/quorum-max-length-bytes-properties.txt (recorded on
// 3.10.8, 4.0.5 and 4.3.6) and scenarios/testdata/profiles/
// quorum-counts-properties.txt (4.1 and 4.2, from the source). One case
// is not a scenario's: amqp091-go sends no empty headers table.

// 4.3 counts an empty headers table as 4 bytes beside the 2 of the
// property flags: six 2-byte messages under 24 bytes keep three (measured
// on 4.3.6 with a raw socket).
func TestQuorumCountsEmptyHeaders43(t *testing.T) {
	e := newEnvOn(t, sim.V4_3)
	e.declare("q", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "quorum", "x-max-length-bytes": int64(24)}})
	e.publishOn(e.ch, "q", sim.Properties{Headers: sim.Table{}}, msgs(6)...)
	diff(t, "kept", msgs(6)[3:], e.ready("q"))
}
