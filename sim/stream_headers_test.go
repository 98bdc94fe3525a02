package sim_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/amqpsim/amqpsim/sim"
)

// A stream's consumers get a message's type and app-id back from headers
// named x-basic-type and x-basic-app-id when the message lacks the
// property: the conversion to AMQP 1.0 carries the properties under those
// names, and the way back takes the first of each. Measured with
// amqp091-go on 3.10.8, 4.0.5 and 4.3.6 (no scenario step shows a
// delivery's type or app-id): 3.10 keeps the headers beside the
// properties, 4.x leaves every x-basic- header out and keeps no app-id
// from a header (its app-id travels as group-id).
func TestStreamBasicHeaders(t *testing.T) {
	type got struct {
		Type, AppID string
		Headers     sim.Table
	}
	headers := sim.Table{"x-basic-type": "t", "x-basic-app-id": "app"}
	for _, tc := range []struct {
		v             sim.Version
		bare, withAll got
	}{
		{sim.V3_10,
			got{"t", "app", sim.Table{"x-stream-offset": int64(0)}},
			got{"T", "A", sim.Table{"x-basic-type": "t", "x-basic-app-id": "app", "x-stream-offset": int64(1)}}},
		{sim.V4_0,
			got{"t", "", sim.Table{"x-stream-offset": int64(0)}},
			got{"T", "A", sim.Table{"x-stream-offset": int64(1)}}},
		{sim.V4_3,
			got{"t", "", sim.Table{"x-stream-offset": int64(0)}},
			got{"T", "A", sim.Table{"x-stream-offset": int64(1)}}},
	} {
		e := newEnvOn(t, tc.v)
		e.declare("s", sim.QueueOptions{Durable: true, Args: sim.Table{"x-queue-type": "stream"}})
		e.qos(e.ch, 10, false)
		c := e.consume(e.ch, "s", "T", sim.ConsumeOptions{Args: sim.Table{"x-stream-offset": "next"}})
		e.publishOn(e.ch, "s", sim.Properties{Headers: headers}, "a")
		e.publishOn(e.ch, "s", sim.Properties{Type: "T", AppID: "A", Headers: headers}, "b")
		for i, want := range []got{tc.bare, tc.withAll} {
			d, ok := c.Next()
			if !ok {
				t.Fatalf("%v: no delivery %d", tc.v, i)
			}
			p := d.Message.Properties
			if diff := cmp.Diff(want, got{p.Type, p.AppID, p.Headers}); diff != "" {
				t.Errorf("%v: delivery %d (-want +got):\n%s", tc.v, i, diff)
			}
		}
	}
}
