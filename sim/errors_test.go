package sim_test

import (
	"strings"
	"testing"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// A second channel.open of a live channel id is 504, closing the
// connection. (Every other error of the semantics page's section 10 is in
// the library's scenarios, each recorded with its code, text, method and
// scope: error-*.txt, declare-*.txt, qos-prefetch-size-closes-connection.txt
// and others; a scenario cannot open a channel id twice.)
func TestErrorSecondChannelOpen(t *testing.T) {
	e := newEnv(t)
	other := e.b.Connect("other")
	_, err := e.conn.OpenChannel(e.ch.ID())
	wantErr(t, err, 504, "CHANNEL_ERROR - second 'channel.open' seen", protocol.Method{Class: 20, ID: 10})
	wantClosed(t, e.ch.Err(), asError(err))
	if e.conn.Err() == nil {
		t.Error("the connection is still open")
	}
	if other.Err() != nil {
		t.Errorf("another connection closed: %v", other.Err())
	}
}

// 403-406 (and 311-313) are soft (channel) errors; 320, 402, 501-506, 530, 540, 541 are hard (connection).
func TestErrorScopeByCode(t *testing.T) {
	hard := map[int]bool{}
	for _, c := range []int{320, 402, 501, 502, 503, 504, 505, 506, 530, 540, 541} {
		hard[c] = true
	}
	for _, c := range []int{311, 312, 313, 320, 402, 403, 404, 405, 406, 501, 502, 503, 504, 505, 506, 530, 540, 541} {
		if got := protocol.IsHard(c); got != hard[c] {
			t.Errorf("IsHard(%d) = %t, want %t", c, got, hard[c])
		}
	}
}

// Reply texts are "<NAME> - <explanation>", cut to 252 bytes plus "..." when longer than 255.
func TestErrorTextTruncatedAt255(t *testing.T) {
	e := newEnv(t)
	name := strings.Repeat("n", 250)
	_, err := e.ch.Consume(name, sim.ConsumeOptions{})
	full := "NOT_FOUND - no queue '" + name + "' in vhost '/'"
	wantErr(t, err, 404, full[:252]+"...", protocol.BasicConsume)
	if n := len(asError(err).Text); n != 255 {
		t.Errorf("text length %d, want 255", n)
	}
}
