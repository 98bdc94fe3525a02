package sim_test

import "testing"

// basic.qos's conversations are library scenarios (scenarios/library/qos-*.txt
// and seed003-*.txt, recorded on RabbitMQ); what stays here is the Go API's
// own error.

// prefetch_count is an AMQP short (0..65535); out of range is API misuse, a Go error that leaves the channel open.
func TestQosCountOutOfRangeIsAPIError(t *testing.T) {
	e := newEnv(t)
	e.must(e.ch.Qos(65535, 0, false))
	err := e.ch.Qos(65536, 0, false)
	if err == nil || asError(err) != nil {
		t.Fatalf("Qos(65536) = %v, want a plain Go error", err)
	}
	if e.ch.Err() != nil {
		t.Errorf("channel closed: %v", e.ch.Err())
	}
}
