package wire

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/amqpsim/amqpsim/protocol"
	"github.com/amqpsim/amqpsim/sim"
)

// Version is amqpsim's own version, in connection.start's information.
const Version = "0.1.0"

// serverProperties are connection.start's server-properties as the
// simulated release sends them (measured on 3.10.8, 4.0.5 and 4.3.6:
// product, version, platform, copyright, cluster_name and capabilities,
// the same capabilities on all three), so that clients that branch on them
// behave as in production; version, platform and copyright are the
// profile's (sim.Profile). amqpsim names itself only in information,
// which clients show and do not branch on.
func serverProperties(p sim.Profile) protocol.Table {
	return protocol.Table{
		"product":      "RabbitMQ",
		"version":      p.ServerVersion,
		"platform":     p.Platform,
		"copyright":    p.Copyright,
		"information":  "amqpsim " + Version + " (" + runtime.Version() + "), a simulator of RabbitMQ " + p.ServerVersion + "; see https://github.com/amqpsim/amqpsim",
		"cluster_name": "rabbit@amqpsim",
		"capabilities": protocol.Table{
			"publisher_confirms":           true,
			"exchange_exchange_bindings":   true,
			"basic.nack":                   true,
			"consumer_cancel_notify":       true,
			"connection.blocked":           true,
			"consumer_priorities":          true,
			"authentication_failure_close": true,
			"per_consumer_qos":             true,
			"direct_reply_to":              true,
		},
	}
}

// handshake runs the protocol header, connection.start, tune and open
// exchange, writing synchronously (the writer goroutine starts after it).
// Errors are answered as RabbitMQ does: most close the socket silently,
// an unknown mechanism, a malformed response and an out-of-range tune-ok
// 3 s later (linger); a refused login sends connection.close only to
// clients that announce authentication_failure_close and then waits for
// close-ok (awaitCloseOk); open errors send connection.close. It reports
// whether the connection is open.
func (c *serverConn) handshake() bool {
	timeout := c.s.HandshakeTimeout
	if timeout <= 0 {
		timeout = DefaultHandshakeTimeout
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(timeout))

	var header [8]byte
	if _, err := io.ReadFull(c.br, header[:]); err != nil {
		return false
	}
	profile := c.s.Broker.Profile()
	if a := profile.ProtocolHeader(header); !a.Start {
		// "If the server cannot support the protocol specified in the
		// protocol header, it MUST respond with a valid protocol header
		// and then close the socket connection." Which header is the
		// simulated release's (sim.Profile.ProtocolHeader).
		_, _ = c.bw.Write(a.Reply[:])
		_ = c.bw.Flush()
		if a.Unsimulated != "" {
			c.s.logf("wire: connection from %s: protocol header %q starts %s on RabbitMQ %s, which amqpsim does not simulate", c.nc.RemoteAddr(), header[:], a.Unsimulated, profile.ServerVersion)
		} else {
			c.s.logf("wire: connection from %s: unsupported protocol header %q", c.nc.RemoteAddr(), header[:])
		}
		return false
	}
	if !c.send(0, &ConnectionStart{VersionMajor: 0, VersionMinor: 9, ServerProperties: serverProperties(profile),
		Mechanisms: profile.Mechanisms, Locales: "en_US"}) {
		return false
	}

	startOk, ok := handshakeMethod[*ConnectionStartOk](c)
	if !ok {
		return false
	}
	caps, _ := startOk.ClientProperties["capabilities"].(protocol.Table)
	c.authClose = caps["authentication_failure_close"] == true
	cancelNotify := caps["consumer_cancel_notify"] == true
	blockedNotify := caps["connection.blocked"] == true
	name, _ := startOk.ClientProperties["connection_name"].(string)
	user, pass, ok := c.credentials(startOk, profile)
	if !ok {
		// RabbitMQ closes the socket without a word 3 s later (measured
		// on 3.10.8, 4.0.5 and 4.3.6 with a mechanism it does not offer
		// and with a malformed PLAIN response).
		c.linger()
		return false
	}
	// The broker checks the login (sim.Broker.Authenticate); the wire only
	// extracted the credentials.
	local := localAddr(c.nc)
	if _, err := c.s.Broker.Authenticate(user, pass, local); err != nil {
		c.refuseLogin(startOk.Mechanism, err)
		return false
	}

	offer := &ConnectionTune{ChannelMax: c.s.channelMax(), FrameMax: c.s.frameMax(), Heartbeat: c.s.heartbeatSeconds()}
	if !c.send(0, offer) {
		return false
	}
	tuneOk, ok := handshakeMethod[*ConnectionTuneOk](c)
	if !ok {
		return false
	}
	// RabbitMQ 3.10.8 answers an out-of-range tune-ok with no close frame
	// and drops the socket 3 s later (measured).
	for _, err := range []*protocol.Error{
		negotiate("frame_max", FrameMinSize, uint64(offer.FrameMax), uint64(tuneOk.FrameMax)),
		negotiate("channel_max", 1, uint64(offer.ChannelMax), uint64(tuneOk.ChannelMax)),
	} {
		if err != nil {
			c.s.logf("wire: connection from %s: %s", c.nc.RemoteAddr(), err.Text)
			c.linger()
			return false
		}
	}
	c.frameMax, c.channelMax = tuneOk.FrameMax, tuneOk.ChannelMax
	c.heartbeat = time.Duration(tuneOk.Heartbeat) * time.Second
	if c.heartbeat > 0 { // RabbitMQ starts its heartbeaters at tune-ok
		// What the client sent after tune-ok counts as received, even if
		// the reader has already buffered it.
		consumed := c.recvBytes.Load() - uint64(c.br.Buffered())
		c.wg.Add(1)
		go c.heartbeatLoop(consumed)
	}
	c.fw.SetFrameMax(c.frameMax)

	open, ok := handshakeMethod[*ConnectionOpen](c)
	if !ok {
		return false
	}
	channelMax := c.channelMax
	if channelMax == 0 { // negotiated "no limit"
		channelMax = 65535
	}
	sc, err := c.s.Broker.Dial(sim.ConnectOptions{
		Name: name, Vhost: open.VirtualHost, User: user, Password: pass, LocalAddr: local, Node: c.node,
		NoCancelNotify:  !cancelNotify,
		NoBlockedNotify: !blockedNotify,
		ChannelMax:      channelMax,
		// A client across a socket, as RabbitMQ treats one: it answers
		// channel.close, its frames come in reads (batchReader), its
		// deliveries wait for the writer (writeLoop reports Written), and
		// the replies come in order with the rest of what the broker
		// sends (writePush).
		Shell: sim.ShellOptions{
			Notify:          c.notify,
			AwaitCloseOk:    true,
			Batched:         true,
			MaxUnsent:       sim.DefaultMaxUnsent,
			SentWhenWritten: true,
			Replies:         true,
		},
		// For inspection (the management API's connection list).
		ClientProperties: startOk.ClientProperties,
		PeerName:         c.nc.RemoteAddr().String(),
		SockName:         c.nc.LocalAddr().String(),
		AuthMechanism:    startOk.Mechanism,
		FrameMax:         c.frameMax,
		Heartbeat:        c.heartbeat,
	})
	if le := (*sim.LoginError)(nil); errors.As(err, &le) {
		// The user went between start-ok and open.
		c.refuseLogin(startOk.Mechanism, err)
		return false
	}
	if err != nil {
		perr, ok := err.(*protocol.Error)
		if !ok {
			perr = protocol.Errorf(protocol.InternalError, protocol.ConnectionOpen, "%v", err)
		}
		c.s.logf("wire: connection from %s: %s", c.nc.RemoteAddr(), perr.Text)
		c.closeHandshake(perr)
		return false
	}
	c.mu.Lock()
	c.sc = sc
	c.mu.Unlock()
	_ = c.nc.SetReadDeadline(time.Time{})
	return c.send(0, &ConnectionOpenOk{})
}

// refuseLogin answers a refused login as RabbitMQ does: the broker's log
// line, then, for a client with the authentication_failure_close
// capability, a 403 connection.close that names only the mechanism; with
// or without it, the connection then waits for close-ok (awaitCloseOk).
func (c *serverConn) refuseLogin(mechanism string, err error) {
	reason := err.Error()
	le := (*sim.LoginError)(nil)
	if errors.As(err, &le) {
		reason = le.Reason
	}
	c.s.logf("wire: connection from %s: %s login refused: %s", c.nc.RemoteAddr(), mechanism, reason)
	if c.authClose {
		c.sendClose(sim.LoginRefusal(mechanism))
	}
	c.awaitCloseOk()
}

// awaitCloseOk is RabbitMQ's closing state after a refused login: the
// socket is dropped as soon as the client sends connection.close-ok, a
// connection.close is answered with close-ok, and anything else is
// ignored until the server's HandshakeFailureDelay has passed. Measured on
// 3.10.8 (4.0.5 and 4.3.6 alike), with and without the
// authentication_failure_close capability: a close-ok sent at once or 1 s
// after the refusal drops the socket then, a connection.close sent after
// 1 s gets close-ok and the socket is dropped 3 s after the refusal, as
// it is when the client sends nothing or a heartbeat. amqp091-go answers
// the 403 close with close-ok, so it sees the socket dropped at once.
func (c *serverConn) awaitCloseOk() {
	d, ok := c.failureDelay()
	if !ok {
		return
	}
	deadline := time.Now().Add(d)
	_ = c.nc.SetReadDeadline(deadline)
	for {
		f, err := c.readFrame()
		if fe := (*frameError)(nil); errors.As(err, &fe) {
			c.lingerUntil(deadline)
			return
		}
		if err != nil {
			return
		}
		if f.Type != FrameMethod || f.Channel != 0 {
			continue
		}
		m, err := DecodeMethod(f.Payload)
		if err != nil {
			continue
		}
		switch m.(type) {
		case *ConnectionCloseOk:
			return
		case *ConnectionClose:
			c.send(0, &ConnectionCloseOk{})
		}
	}
}

// localAddr is the connection's own address, which RabbitMQ's loopback
// rule reads; the zero Addr (loopback) for transports without one, such
// as the in-memory Pipe.
func localAddr(nc net.Conn) netip.Addr {
	if a, ok := nc.LocalAddr().(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			return ip.Unmap()
		}
	}
	return netip.Addr{}
}

// credentials extracts user and password from start-ok for PLAIN or
// AMQPLAIN, as RabbitMQ's mechanisms parse them; ANONYMOUS, where the
// profile offers it, ignores its response and logs in as
// sim.AnonymousUser.
func (c *serverConn) credentials(m *ConnectionStartOk, p sim.Profile) (user, pass string, ok bool) {
	mechanism := m.Mechanism
	if !p.OffersMechanism(mechanism) {
		mechanism = "" // not offered: unknown
	}
	switch mechanism {
	case "ANONYMOUS":
		return sim.AnonymousUser, sim.AnonymousPassword, true
	case "PLAIN":
		// "\0user\0pass": an empty authorization identity, then two
		// NUL-separated fields (rabbit_auth_mechanism_plain).
		r := m.Response
		if !strings.HasPrefix(r, "\x00") {
			break
		}
		user, rest, found := strings.Cut(r[1:], "\x00")
		if !found || strings.Contains(rest, "\x00") {
			break
		}
		return user, rest, true
	case "AMQPLAIN":
		// A field table without its length prefix, with LOGIN and
		// PASSWORD longstrs.
		b := append([]byte{0, 0, 0, 0}, m.Response...)
		n := len(m.Response)
		b[0], b[1], b[2], b[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
		t, err := DecodeTable(b)
		if err != nil {
			break
		}
		login, ok1 := t["LOGIN"].(string)
		password, ok2 := t["PASSWORD"].(string)
		if ok1 && ok2 {
			return login, password, true
		}
	default:
		c.s.logf("wire: connection from %s: unknown authentication mechanism '%s'", c.nc.RemoteAddr(), m.Mechanism)
		return "", "", false
	}
	c.s.logf("wire: connection from %s: malformed %s response", c.nc.RemoteAddr(), m.Mechanism)
	return "", "", false
}

// negotiate checks a tune-ok value as rabbit_reader's
// validate_negotiated_integer_value does.
func negotiate(field string, least, server, client uint64) *protocol.Error {
	detail := ""
	if field == "channel_max" && client == 0 {
		detail = " (no limit)"
	}
	switch {
	case client != 0 && client < least:
		return protocol.Errorf(protocol.NotAllowed, protocol.ConnectionTune,
			"negotiated %s = %d%s is lower than the minimum allowed value (%d)", field, client, detail, least)
	case server != 0 && (client == 0 || client > server):
		return protocol.Errorf(protocol.NotAllowed, protocol.ConnectionTune,
			"negotiated %s = %d%s is higher than the maximum allowed value (%d)", field, client, detail, server)
	}
	return nil
}

// handshakeMethod reads the next method on channel 0, skipping
// heartbeats, and reports whether it is a T. Anything else ends the
// handshake (RabbitMQ closes the socket without a word).
func handshakeMethod[T Method](c *serverConn) (T, bool) {
	var zero T
	for {
		f, err := c.readFrame()
		if err != nil {
			return zero, false
		}
		if f.Type == FrameHeartbeat && f.Channel == 0 {
			continue
		}
		if f.Type != FrameMethod || f.Channel != 0 {
			return zero, false
		}
		m, err := DecodeMethod(f.Payload)
		if err != nil {
			return zero, false
		}
		t, ok := m.(T)
		return t, ok
	}
}

// send writes one method synchronously (handshake only).
func (c *serverConn) send(ch uint16, m Method) bool {
	if err := c.fw.WriteMethod(ch, m); err != nil {
		return false
	}
	return c.bw.Flush() == nil
}

// sendClose writes connection.close for err synchronously.
func (c *serverConn) sendClose(err *protocol.Error) {
	c.send(0, closeMethod(err))
}

// linger keeps a connection whose handshake failed silently open for the
// server's HandshakeFailureDelay, or until the client closes it, as
// RabbitMQ's reader sleeps 3 s before it drops the socket after a
// handshake error (an unknown mechanism, a malformed response, an
// out-of-range tune-ok), against brute force. Whatever the client sends
// meanwhile, close-ok and connection.close included, is ignored (measured
// on 3.10.8, 4.0.5 and 4.3.6).
func (c *serverConn) linger() {
	if d, ok := c.failureDelay(); ok {
		c.lingerUntil(time.Now().Add(d))
	}
}

// lingerUntil discards what the client sends until deadline.
func (c *serverConn) lingerUntil(deadline time.Time) {
	_ = c.nc.SetReadDeadline(deadline)
	for {
		if _, err := c.br.Discard(c.br.Buffered() + 1); err != nil {
			return
		}
	}
}

// failureDelay is the server's HandshakeFailureDelay, RabbitMQ's 3 s for
// zero; false for a negative one (drop at once).
func (c *serverConn) failureDelay() (time.Duration, bool) {
	d := c.s.HandshakeFailureDelay
	switch {
	case d < 0:
		return 0, false
	case d == 0:
		d = DefaultHandshakeFailureDelay
	}
	return d, true
}

// closeHandshake sends connection.close during the handshake and waits,
// bounded by the close timeout, for close-ok.
func (c *serverConn) closeHandshake(err *protocol.Error) {
	c.sendClose(err)
	_ = c.nc.SetReadDeadline(time.Now().Add(c.closeTimeout()))
	for {
		f, err := c.readFrame()
		if err != nil {
			return
		}
		if f.Type != FrameMethod || f.Channel != 0 {
			continue
		}
		if m, err := DecodeMethod(f.Payload); err == nil {
			if _, ok := m.(*ConnectionCloseOk); ok {
				return
			}
		}
	}
}

// closeTimeout is how long to wait for connection.close-ok.
func (c *serverConn) closeTimeout() time.Duration {
	if c.s.CloseTimeout > 0 {
		return c.s.CloseTimeout
	}
	if c.heartbeat > 0 && c.heartbeat < 30*time.Second {
		return c.heartbeat
	}
	return 30 * time.Second
}

// closeMethod is the connection.close frame for err.
func closeMethod(err *protocol.Error) *ConnectionClose {
	return &ConnectionClose{ReplyCode: uint16(err.Code), ReplyText: err.Text, ClassID: err.Method.Class, MethodID: err.Method.ID}
}

// snippet renders a frame payload as RabbitMQ's reader does in frame
// errors: "all octets = <<...>>" or "first 16 octets = <<...>>".
func snippet(payload []byte) string {
	if len(payload) <= 16 {
		return "all octets = " + erlangBinary(payload, true)
	}
	return "first 16 octets = " + erlangBinary(payload[:16], true)
}

// erlangBinary formats b as Erlang prints a binary: with ~p (pretty true) a
// printable binary is a string, <<"text">>; otherwise, and always with ~w,
// a list of byte values, <<1,2,3>>.
func erlangBinary(b []byte, pretty bool) string {
	var sb bytes.Buffer
	sb.WriteString("<<")
	if pretty && len(b) > 0 && printableLatin1(b) {
		sb.WriteByte('"')
		for _, x := range b {
			switch x {
			case '\n':
				sb.WriteString(`\n`)
			case '\r':
				sb.WriteString(`\r`)
			case '\t':
				sb.WriteString(`\t`)
			case '\v':
				sb.WriteString(`\v`)
			case '\b':
				sb.WriteString(`\b`)
			case '\f':
				sb.WriteString(`\f`)
			case 0x1b:
				sb.WriteString(`\e`)
			case '"':
				sb.WriteString(`\"`)
			case '\\':
				sb.WriteString(`\\`)
			default:
				sb.WriteByte(x)
			}
		}
		sb.WriteByte('"')
	} else {
		for i, x := range b {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(strconv.Itoa(int(x)))
		}
	}
	sb.WriteString(">>")
	return sb.String()
}

// printableLatin1 is io_lib:printable_latin1_list for bytes.
func printableLatin1(b []byte) bool {
	for _, x := range b {
		switch {
		case x >= 32 && x <= 126, x >= 160:
		case x == '\n', x == '\r', x == '\t', x == '\v', x == '\b', x == '\f', x == 0x1b:
		default:
			return false
		}
	}
	return true
}
