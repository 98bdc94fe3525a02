package sim_test

import (
	"testing"

	"github.com/amqpsim/amqpsim/sim"
)

// The 4.0 changes to quorum single active consumer queues and to
// basic.consume are scenarios: quorum-sac-priority.txt and
// quorum-single-active-consumer.txt in the library (recorded on 3.10.8,
// 4.0.5 and 4.3.6), and quorum-sac-get-text.txt,
// quorum-sac-hand-over-on-return.txt and consumer-max-per-channel*.txt in
// scenarios/testdata/profiles, which follow the rabbitmq-server source.

// 3.10 has no consumer_max_per_channel (its rabbitmq.conf schema does not
// know the key): a Config that sets it is refused, as is a negative one.
func TestConsumerMaxPerChannelConfig(t *testing.T) {
	for _, cfg := range []sim.Config{{Version: sim.V3_10, ConsumerMaxPerChannel: 1}, {Version: sim.V3_13, ConsumerMaxPerChannel: 1},
		{Version: sim.V4_0, ConsumerMaxPerChannel: -1}} {
		if _, err := sim.Open(cfg); err == nil {
			t.Errorf("Open(%v, ConsumerMaxPerChannel %d) = nil error", cfg.Version, cfg.ConsumerMaxPerChannel)
		}
	}
	if _, err := sim.Open(sim.Config{Version: sim.V4_3, ConsumerMaxPerChannel: 1}); err != nil {
		t.Error(err)
	}
}
