package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// serve --definitions imports a file exported from RabbitMQ 3.10.8 before
// it listens: its users log in with their passwords.
func TestServeDefinitions(t *testing.T) {
	amqpURL, _ := startServe(t, "--addr", "127.0.0.1:0", "--clock", "manual", "--definitions", "../../sim/testdata/definitions-3.10.8.json")
	host := strings.TrimSuffix(amqpURL[strings.Index(amqpURL, "@")+1:], "/")
	conn, err := amqp.Dial("amqp://app:s3cret@" + host + "/app-vhost?heartbeat=0")
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn(t, conn)
	ch, _ := conn.Channel()
	if _, err := ch.QueueDeclarePassive("app.orders", true, false, false, false, nil); err != nil {
		t.Fatalf("the imported queue: %v", err)
	}
}

func TestServeBadDefinitions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(path, []byte(`{"queues":[{"name":"q","vhost":"nosuch","durable":true,"arguments":{}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	err := serve(context.Background(), []string{"--addr", "127.0.0.1:0", "--definitions", path}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `queues[0] "q": vhost 'nosuch' does not exist`) {
		t.Fatalf("serve: %v", err)
	}
}
