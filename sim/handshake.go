package sim

import (
	"slices"
	"strings"
)

// The protocol headers RabbitMQ answers with: AMQP 0-9-1's, and AMQP
// 1.0's SASL header (protocol id 3).
var (
	amqp091Header    = [8]byte{'A', 'M', 'Q', 'P', 0, 0, 9, 1}
	amqp10SASLHeader = [8]byte{'A', 'M', 'Q', 'P', 3, 1, 0, 0}
)

// HeaderAnswer is what a release does with the eight bytes a client opens
// a connection with (Profile.ProtocolHeader).
type HeaderAnswer struct {
	// Start is true when the release starts AMQP 0-9-1: it sends
	// connection.start with protocol version 0-9 (the header of 0-9-1 and
	// the one of 0-9, "AMQP\x01\x01\x00\x09", which rabbit_reader treats
	// as 0-9-1).
	Start bool
	// Reply is the protocol header sent before the socket closes when
	// Start is false.
	Reply [8]byte
	// Unsimulated names the protocol the release would start, which
	// amqpsim does not speak ("AMQP 0-8", "AMQP 1.0"), or is "". amqpsim
	// then answers as a broker that speaks only 0-9-1: Reply is 0-9-1's
	// header.
	Unsimulated string
}

// ProtocolHeader answers a client's protocol header as the release does
// (measured with a raw socket on 3.10.8, 4.0.5 and 4.3.6; the Profile
// fields AMQP08, AMQP10 and RefusalHeader say what differs).
func (p Profile) ProtocolHeader(h [8]byte) HeaderAnswer {
	refusal := p.RefusalHeader
	if refusal == ([8]byte{}) {
		refusal = amqp091Header
	}
	amqp := string(h[:4]) == "AMQP"
	switch v := [4]byte(h[4:]); {
	case h == amqp091Header, amqp && v == [4]byte{1, 1, 0, 9}:
		return HeaderAnswer{Start: true}
	case amqp && (v == [4]byte{1, 1, 8, 0} || v == [4]byte{1, 1, 9, 1}) && p.AMQP08:
		return HeaderAnswer{Reply: amqp091Header, Unsimulated: "AMQP 0-8"}
	case h == amqp10SASLHeader && p.AMQP10:
		return HeaderAnswer{Reply: amqp091Header, Unsimulated: "AMQP 1.0"}
	case amqp && v[0] == 0 && v[1] == 0 && v[2] == 9:
		return HeaderAnswer{Reply: amqp091Header}
	}
	return HeaderAnswer{Reply: refusal}
}

// AnonymousUser and AnonymousPassword are the credentials the ANONYMOUS
// mechanism logs in with where the profile offers it (Profile.Mechanisms):
// RabbitMQ's anonymous_login_user and anonymous_login_pass defaults
// (rabbit_auth_mechanism_anonymous:credentials/0; measured: 4.0.5 lists
// a connection that logged in with ANONYMOUS as guest's). The user's
// password and loopback rules apply as to any login.
const (
	AnonymousUser     = "guest"
	AnonymousPassword = "guest"
)

// OffersMechanism reports whether connection.start offers the SASL
// mechanism (Profile.Mechanisms).
func (p Profile) OffersMechanism(name string) bool {
	return slices.Contains(strings.Fields(p.Mechanisms), name)
}
