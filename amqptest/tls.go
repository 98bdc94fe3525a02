package amqptest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"time"
)

// WithTLS serves AMQP over TLS (amqps) with a certificate generated in
// memory when the server starts: a self-signed ECDSA P-256 certificate
// for "amqpsim", "localhost", 127.0.0.1 and ::1. URL() then starts with
// "amqps://", and TLSConfig() is the client's configuration that trusts
// that certificate, so code that dials amqps:// runs unchanged:
//
//	srv := amqptest.NewServer(t, amqptest.WithTLS())
//	conn, err := amqp.DialConfig(srv.URL(), amqp.Config{Dial: srv.Dial, TLSClientConfig: srv.TLSConfig()})
//
// With WithTCP as well the server listens on 127.0.0.1 and
// amqp.DialTLS(srv.URL(), srv.TLSConfig()) dials it. Over the in-memory
// transport amqp091-go runs TLS itself on the connection Dial returns.
// StallConnection is refused on TLS connections.
func WithTLS() Option { return func(c *config) { c.tls = true } }

// TLSConfig returns a new client configuration that trusts the server's
// generated certificate, with ServerName "amqpsim" (which the certificate
// names, whatever address is dialled), or nil without WithTLS. Each call
// returns a fresh copy: amqp091-go may fill in a configuration it is
// given.
func (s *Server) TLSConfig() *tls.Config {
	if s.tlsClient == nil {
		return nil
	}
	return s.tlsClient.Clone()
}

// newTLS makes the server's certificate, and the server and client
// configurations around it.
func newTLS() (server, client *tls.Config, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		return nil, nil, err
	}
	// In a synctest bubble time.Now is the bubble's clock (from 2000); the
	// certificate is valid around whichever clock the handshake reads.
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "amqpsim", Organization: []string{"amqptest"}},
		NotBefore:             now.Add(-24 * time.Hour),
		NotAfter:              now.Add(100 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"amqpsim", "localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	server = &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}},
		MinVersion:   tls.VersionTLS12,
	}
	client = &tls.Config{RootCAs: pool, ServerName: "amqpsim", MinVersion: tls.VersionTLS12}
	return server, client, nil
}

// plain returns the transport under a TLS connection, where the
// in-memory faults act.
func plain(nc net.Conn) net.Conn {
	if tc, ok := nc.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return nc
}
