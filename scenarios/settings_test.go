package scenarios_test

import (
	"strings"
	"testing"
	"time"

	"github.com/amqpsim/amqpsim/scenarios"
	"github.com/amqpsim/amqpsim/sim"
)

// The config directive reads RabbitMQ's setting names and values, writes
// them back in a fixed order, sets the simulator's Config, and keeps a
// file from a real broker.
func TestSettingsDirective(t *testing.T) {
	src := "# t\nsource hand-written 4.0\nconfig channel_tick_interval=1000 consumer_max_per_channel=2 consumer_timeout=false\n\nconn c1\n"
	s, err := scenarios.Parse("c.txt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := scenarios.Settings{ConsumerTimeout: -1, ChannelTickInterval: time.Second, ConsumerMaxPerChannel: 2}
	if s.Settings == nil || *s.Settings != want {
		t.Errorf("Settings = %+v, want %+v", s.Settings, want)
	}
	if got, want := string(s.Format()), strings.Replace(src, "config channel_tick_interval=1000 consumer_max_per_channel=2 consumer_timeout=false",
		"config consumer_timeout=false channel_tick_interval=1000 consumer_max_per_channel=2", 1); got != want {
		t.Errorf("Format:\n%s\nwant\n%s", got, want)
	}
	if c := s.Clone(); c.Settings == s.Settings || *c.Settings != *s.Settings {
		t.Error("Clone shares or loses the settings")
	}
	_, _, err = scenarios.Record(s, scenarios.RecordOptions{URL: "amqp://guest:guest@127.0.0.1:1/"})
	if err == nil || !strings.Contains(err.Error(), "sets broker settings (config consumer_timeout=false") {
		t.Errorf("Record: %v, want a refusal before dialling", err)
	}
	for bad, msg := range map[string]string{
		"config":                                                      "expected \"config KEY=VALUE...\"",
		"config consumer_timeout=0":                                   `"consumer_timeout=0"`,
		"config consumer_timeout=soon":                                `"consumer_timeout=soon"`,
		"config channel_tick_interval=9223372036855":                  `"channel_tick_interval=9223372036855"`,
		"config prefetch=1":                                           `"prefetch=1"`,
		"config consumer_timeout=1 consumer_timeout=2":                "each key once",
		"source hand-written 3.13\nconfig consumer_max_per_channel=1": "c.txt:2:8: RabbitMQ 3.13 has no consumer_max_per_channel",
	} {
		if _, err := scenarios.Parse("c.txt", []byte(bad+"\nconn c1\n")); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want %q", bad, err, msg)
		}
	}
	// A replay on another release's profile that has no such setting is
	// an error, not a panic.
	if _, err := scenarios.ReplayOn(s, sim.V3_10); err == nil || !strings.Contains(err.Error(), "consumer_max_per_channel") {
		t.Errorf("ReplayOn(3.10): %v", err)
	}
}
