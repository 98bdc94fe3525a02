package scenarios

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/sim"
)

// A scenario measured on a broker whose settings were changed says so
// with a directive before its first step:
//
//	config consumer_timeout=3000 channel_tick_interval=1000
//
// Each key is a setting of RabbitMQ's rabbit application, with the value
// it was given (rabbitmqctl eval 'application:set_env(rabbit,
// consumer_timeout, 3000).'), which the simulator takes from its Config:
//
//	consumer_timeout=MS|false      sim.Config.ConsumerTimeout (false: none, as a non-integer setting)
//	channel_tick_interval=MS       sim.Config.ChannelTickInterval
//	consumer_max_per_channel=N     sim.Config.ConsumerMaxPerChannel (4.0+)
//
// Both drivers of the simulator apply them. Record refuses such a file:
// the settings are the broker's, shared by every recording running on it,
// so a scenario cannot change them and put them back without changing
// the answers of the others; the results are measured on a broker of its
// own and written by hand.

// Settings are a scenario's config directive: broker settings other than
// RabbitMQ's defaults. The zero value of a field keeps the default.
type Settings struct {
	// ConsumerTimeout is consumer_timeout; negative for false (none).
	ConsumerTimeout time.Duration
	// ChannelTickInterval is channel_tick_interval.
	ChannelTickInterval time.Duration
	// ConsumerMaxPerChannel is consumer_max_per_channel.
	ConsumerMaxPerChannel int
}

// String returns the directive's value, the keys in a fixed order:
// "consumer_timeout=3000 channel_tick_interval=1000".
func (st *Settings) String() string {
	var w []string
	switch {
	case st.ConsumerTimeout < 0:
		w = append(w, "consumer_timeout=false")
	case st.ConsumerTimeout > 0:
		w = append(w, fmt.Sprintf("consumer_timeout=%d", st.ConsumerTimeout.Milliseconds()))
	}
	if st.ChannelTickInterval > 0 {
		w = append(w, fmt.Sprintf("channel_tick_interval=%d", st.ChannelTickInterval.Milliseconds()))
	}
	if st.ConsumerMaxPerChannel > 0 {
		w = append(w, fmt.Sprintf("consumer_max_per_channel=%d", st.ConsumerMaxPerChannel))
	}
	return strings.Join(w, " ")
}

// config sets a simulator's settings.
func (st *Settings) config(cfg *sim.Config) {
	if st == nil {
		return
	}
	cfg.ConsumerTimeout = st.ConsumerTimeout
	cfg.ChannelTickInterval = st.ChannelTickInterval
	cfg.ConsumerMaxPerChannel = st.ConsumerMaxPerChannel
}

// check returns what is wrong with the settings on release v's profile,
// or "": consumer_max_per_channel came with 4.0.
func (st *Settings) check(v sim.Version) string {
	if st == nil || st.ConsumerMaxPerChannel == 0 || v.Profile().ConsumerMaxPerChannel {
		return ""
	}
	return fmt.Sprintf("RabbitMQ %s has no consumer_max_per_channel (4.0+)", v)
}

// maxMillis is the most milliseconds a time.Duration holds.
const maxMillis = int64(math.MaxInt64 / time.Millisecond)

// parseSettings reads a config directive's value, or returns what is
// wrong with it.
func parseSettings(rest string) (*Settings, string) {
	usage := `expected "config KEY=VALUE...": consumer_timeout=MS|false, channel_tick_interval=MS, consumer_max_per_channel=N`
	f := strings.Fields(rest)
	if len(f) == 0 {
		return nil, usage
	}
	st := &Settings{}
	seen := map[string]bool{}
	for _, w := range f {
		k, v, ok := strings.Cut(w, "=")
		if !ok || seen[k] {
			return nil, fmt.Sprintf("%q: %s, each key once", w, usage)
		}
		seen[k] = true
		n, err := strconv.ParseInt(v, 10, 64)
		positive := err == nil && n > 0
		ms := positive && n <= maxMillis // a duration that does not overflow
		switch {
		case k == "consumer_timeout" && v == "false":
			st.ConsumerTimeout = -1
		case k == "consumer_timeout" && ms:
			st.ConsumerTimeout = time.Duration(n) * time.Millisecond
		case k == "channel_tick_interval" && ms:
			st.ChannelTickInterval = time.Duration(n) * time.Millisecond
		case k == "consumer_max_per_channel" && positive && n <= 1<<31:
			st.ConsumerMaxPerChannel = int(n)
		default:
			return nil, fmt.Sprintf("%q: %s, each a positive integer", w, usage)
		}
	}
	return st, ""
}
