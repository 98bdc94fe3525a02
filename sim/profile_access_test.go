package sim_test

import (
	"testing"

	"github.com/amqpsim/amqpsim/sim"
)

// The handshake rules of sim/profile.go that a raw socket measured on
// 3.10.8, 4.0.5 and 4.3.6; the permission and declare rules are
// scenarios (access-refusal-names-permission.txt,
// unknown-exchange-type.txt and queue-mode-unchecked.txt in
// scenarios/testdata/profiles, beside the library's recordings).

// What each release does with a protocol header, as a raw socket measured
// on 3.10.8, 4.0.5 and 4.3.6: 0-9-1's and 0-9's start 0-9-1 everywhere;
// 3.10.8 would start 0-8 on 0-8's and 4.x AMQP 1.0 on its SASL header,
// which amqpsim answers with the 0-9-1 header; other 0-9-x headers get
// the 0-9-1 header; anything else 3.10's 0-9-1 header and 4.x's AMQP 1.0
// SASL header.
func TestProtocolHeaderAnswers(t *testing.T) {
	const (
		h091 = "AMQP\x00\x00\x09\x01"
		sasl = "AMQP\x03\x01\x00\x00"
	)
	for _, tc := range []struct {
		header                  string
		on310, on40, on43       string // "" starts 0-9-1
		unsimulated310, unsim4x string
	}{
		{"AMQP\x00\x00\x09\x01", "", "", "", "", ""},
		{"AMQP\x01\x01\x00\x09", "", "", "", "", ""},
		{"AMQP\x01\x01\x08\x00", h091, sasl, sasl, "AMQP 0-8", ""},
		{"AMQP\x01\x01\x09\x01", h091, sasl, sasl, "AMQP 0-8", ""},
		{"AMQP\x03\x01\x00\x00", h091, h091, h091, "", "AMQP 1.0"},
		{"AMQP\x00\x00\x09\x00", h091, h091, h091, "", ""},
		{"AMQP\x00\x00\x09\x02", h091, h091, h091, "", ""},
		{"AMQP\x00\x00\x08\x00", h091, sasl, sasl, "", ""},
		{"AMQP\x01\x01\x09\x00", h091, sasl, sasl, "", ""},
		{"AMQP\x00\x01\x00\x00", h091, sasl, sasl, "", ""},
		{"AMQP\x02\x01\x00\x00", h091, sasl, sasl, "", ""},
		{"AMQP\x09\x09\x09\x09", h091, sasl, sasl, "", ""},
		{"XMQP\x00\x00\x09\x01", h091, sasl, sasl, "", ""},
		{"GET / HT", h091, sasl, sasl, "", ""},
	} {
		for _, r := range []struct {
			v           sim.Version
			want, unsim string
		}{{sim.V3_10, tc.on310, tc.unsimulated310}, {sim.V4_0, tc.on40, tc.unsim4x}, {sim.V4_3, tc.on43, tc.unsim4x}} {
			a := r.v.Profile().ProtocolHeader([8]byte([]byte(tc.header)))
			got := string(a.Reply[:])
			if a.Start {
				got = ""
			}
			if got != r.want || a.Unsimulated != r.unsim || a.Start && a.Reply != ([8]byte{}) {
				t.Errorf("%v answers %q with %+v, want reply %q (\"\" starts 0-9-1), unsimulated %q", r.v, tc.header, a, r.want, r.unsim)
			}
		}
	}
}

// 4.0.5 and 4.3.6 offer ANONYMOUS, in different places; 3.10.8 does not
// (connection.start's mechanisms, measured with a raw socket).
func TestMechanismsAnonymous40(t *testing.T) {
	for v, want := range map[sim.Version]string{sim.V3_10: "PLAIN AMQPLAIN", sim.V3_13: "PLAIN AMQPLAIN",
		sim.V4_0: "PLAIN ANONYMOUS AMQPLAIN", sim.V4_2: "PLAIN ANONYMOUS AMQPLAIN", sim.V4_3: "PLAIN AMQPLAIN ANONYMOUS"} {
		p := v.Profile()
		if p.Mechanisms != want || p.OffersMechanism("ANONYMOUS") != (v != sim.V3_10 && v != sim.V3_13) {
			t.Errorf("%v offers %q, want %q", v, p.Mechanisms, want)
		}
	}
}
