package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// writeCert writes a self-signed certificate for 127.0.0.1 and its key as
// PEM files and returns their paths and a pool that trusts it.
func writeCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(leaf)
	return certFile, keyFile, pool
}

// TestServeTLS: --tls-cert and --tls-key serve amqps, which
// amqp.DialTLS reaches with the certificate trusted.
func TestServeTLS(t *testing.T) {
	cert, key, pool := writeCert(t)
	amqpURL, _ := startServe(t, "--addr", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key)
	if !strings.HasPrefix(amqpURL, "amqps://") {
		t.Fatalf("serving %s, want amqps", amqpURL)
	}
	conn, err := amqp.DialTLS(amqpURL, &tls.Config{RootCAs: pool})
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn(t, conn)
	if !conn.ConnectionState().HandshakeComplete {
		t.Error("no TLS handshake")
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("tls-q", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
}

func TestServeTLSFlags(t *testing.T) {
	cert, key, _ := writeCert(t)
	o, err := parseServe([]string{"--tls-cert", cert, "--tls-key", key}, io.Discard)
	if err != nil || o.addr != "127.0.0.1:5671" {
		t.Errorf("addr %q (%v), want the amqps port 5671 by default", o.addr, err)
	}
	if o, _ := parseServe([]string{"--tls-cert", cert, "--tls-key", key, "--addr", "127.0.0.1:7000"}, io.Discard); o.addr != "127.0.0.1:7000" {
		t.Errorf("addr %q, want --addr kept", o.addr)
	}
	if _, err := parseServe([]string{"--tls-cert", cert}, io.Discard); err == nil {
		t.Error("--tls-cert without --tls-key accepted")
	}
	err = serve(t.Context(), []string{"--addr", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", cert}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "TLS") {
		t.Errorf("a certificate as its own key: %v, want a TLS error", err)
	}
}
