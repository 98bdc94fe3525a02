package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// startServe runs "amqpsim serve args..." until the test ends and returns
// the AMQP URL and the HTTP API base URL it printed.
func startServe(t *testing.T, args ...string) (amqpURL, apiURL string) {
	t.Helper()
	urls, apiURL := startServeNodes(t, args...)
	return urls[0], apiURL
}

// startServeNodes is startServe that returns every node's AMQP URL, in
// node order (--nodes).
func startServeNodes(t *testing.T, args ...string) (amqpURLs []string, apiURL string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, args, pw, io.Discard)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(bound):
			t.Errorf("waited %v for serve to return once cancelled", bound)
		}
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	want := 1
	for i, a := range args {
		if n, ok := strings.CutPrefix(a, "--nodes="); ok {
			want, _ = strconv.Atoi(n)
		} else if a == "--nodes" && i+1 < len(args) {
			want, _ = strconv.Atoi(args[i+1])
		}
	}
	for _, a := range args {
		if a == "--http" {
			want++
		}
	}
	// serve listens on TCP, outside any synctest bubble: the wait is
	// bounded in real time, and fails saying what it waited for.
	deadline := time.After(bound)
	for want > 0 {
		var l string
		var ok bool
		select {
		case l, ok = <-lines:
		case <-deadline:
			t.Fatalf("waited %v for serve to print its addresses", bound)
		}
		if !ok {
			t.Fatal("serve exited")
		}
		if _, rest, ok := strings.Cut(l, "serving AMQP 0-9-1 on "); ok {
			amqpURL, _, _ := strings.Cut(rest, " ")
			if strings.Contains(amqpURL, ":guest@") {
				t.Errorf("serve printed the password: %s", l)
			}
			amqpURLs = append(amqpURLs, strings.Replace(amqpURL, "amqp://guest@", "amqp://guest:guest@", 1))
			want--
		}
		if _, rest, ok := strings.Cut(l, "HTTP API on "); ok {
			apiURL, _, _ = strings.Cut(rest, "/api/ ")
			want--
		}
	}
	go func() {
		for range lines {
		}
	}()
	return amqpURLs, apiURL
}

// bound is how long a test of serve waits, in real time (serve listens
// on TCP, outside any synctest bubble), for something that must come:
// a broker that never answers fails the test instead of hanging it.
const bound = 10 * time.Second

// recv receives what from c within bound, and fails the test otherwise,
// or if c is closed.
func recv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	v, ok := recvOK(t, c, what)
	if !ok {
		t.Fatalf("%s: the channel closed", what)
	}
	return v
}

// recvOK is recv that reports a closed channel.
func recvOK[T any](t *testing.T, c <-chan T, what string) (T, bool) {
	t.Helper()
	select {
	case v, ok := <-c:
		return v, ok
	case <-time.After(bound):
		t.Fatalf("waited %v for %s", bound, what)
	}
	panic("unreachable")
}

// closeConn closes conn within bound: amqp091-go's Close waits for
// connection.close-ok without a deadline, which a connection an alarm
// holds never sends; serve's shutdown, a cleanup that runs after, then
// drops it.
func closeConn(t *testing.T, conn *amqp.Connection) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		conn.Close()
		close(done)
	}()
	recvOK(t, done, "connection.close-ok")
}

// confirmed waits within bound for a publisher confirm and reports
// whether it is an ack.
func confirmed(t *testing.T, dc *amqp.DeferredConfirmation) bool {
	t.Helper()
	recvOK(t, dc.Done(), fmt.Sprintf("the confirm of publish %d", dc.DeliveryTag))
	return dc.Acked()
}

func getJSON(t *testing.T, method, url string, v any) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	req.SetBasicAuth("guest", "guest")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
	}
	return resp.StatusCode
}

func TestServe(t *testing.T) {
	amqpURL, api := startServe(t, "--addr", "127.0.0.1:0", "--http", "127.0.0.1:0", "--clock", "manual", "--vhost", "extra")
	conn, err := amqp.Dial(amqpURL + "?heartbeat=0")
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn(t, conn)
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	ch.QueueDeclare("orders", false, false, false, false, nil)
	for _, b := range []string{"a", "bb", "ccc"} {
		ch.Publish("", "orders", false, false, amqp.Publishing{Body: []byte(b)})
	}
	d, _, err := ch.Get("orders", false)
	if err != nil {
		t.Fatal(err)
	}

	var q map[string]any
	if code := getJSON(t, "GET", api+"/api/queues/%2F/orders", &q); code != 200 {
		t.Fatalf("status %d", code)
	}
	want := map[string]any{"name": "orders", "vhost": "/", "messages": 3.0, "messages_ready": 2.0,
		"messages_unacknowledged": 1.0, "message_bytes_ready": 5.0, "consumers": 0.0}
	for k, v := range want {
		if q[k] != v {
			t.Errorf("%s = %v, want %v", k, q[k], v)
		}
	}
	var all []map[string]any
	getJSON(t, "GET", api+"/api/queues", &all)
	if len(all) != 1 || all[0]["name"] != "orders" {
		t.Errorf("queues = %v", all)
	}
	if code := getJSON(t, "GET", api+"/api/queues/%2F/nosuch", nil); code != 404 {
		t.Errorf("missing queue: status %d", code)
	}

	// Manual clock: an unacked delivery times out after 30 minutes; from
	// 4.3 only a quorum queue's do.
	if _, err := ch.QueueDeclare("slow", true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
		t.Fatal(err)
	}
	ch.Publish("", "slow", false, false, amqp.Publishing{Body: []byte("s")})
	if _, ok, err := ch.Get("slow", false); !ok || err != nil {
		t.Fatalf("get from slow: %t %v", ok, err)
	}
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	var now map[string]string
	if code := getJSON(t, "POST", api+"/api/sim/advance?by=31m", &now); code != 200 || now["now"] != "2024-01-01T00:31:00Z" {
		t.Fatalf("advance: %d %v", code, now)
	}
	// The advance's answer comes after the broker closed the channel, so
	// the close is on its way. The deadline only bounds a broker that does
	// not close it (a classic queue on 4.3 would not), so that the test
	// fails instead of hanging.
	select {
	case e := <-closed:
		if e == nil || e.Code != 406 {
			t.Errorf("close %v", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no channel.close 31 minutes after the unacked gets: the consumer timeout did not fire")
	}
	_ = d
	if code := getJSON(t, "POST", api+"/api/sim/advance?by=soon", nil); code != 400 {
		t.Errorf("bad duration: status %d", code)
	}
	if c, err := amqp.Dial(strings.TrimSuffix(amqpURL, "/") + "/extra?heartbeat=0"); err != nil {
		t.Errorf("vhost extra: %v", err)
	} else {
		c.Close()
	}
}

// With the wall clock the virtual clock starts at the real time (so a
// stream's timestamp offsets and the API's times are today's) and cannot
// be advanced by hand.
func TestServeWallClock(t *testing.T) {
	before := time.Now()
	_, api := startServe(t, "--addr", "127.0.0.1:0", "--http", "127.0.0.1:0")
	if code := getJSON(t, "POST", api+"/api/sim/advance?by=1m", nil); code != 409 {
		t.Errorf("status %d, want 409", code)
	}
	var now map[string]string
	getJSON(t, "GET", api+"/api/sim/now", &now)
	after := time.Now()
	got, err := time.Parse(time.RFC3339Nano, now["now"])
	// RFC 3339 may drop sub-second digits: a second's slack either side.
	if err != nil || got.Before(before.Add(-time.Second)) || got.After(after.Add(time.Second)) {
		t.Errorf("now %q (%v), want between %v and %v", now["now"], err, before, after)
	}
}

func TestServeFlags(t *testing.T) {
	if err := serve(context.Background(), []string{"--clock", "sundial"}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "--clock") {
		t.Errorf("bad --clock: %v", err)
	}
	if code := run([]string{"serve", "-h"}, io.Discard, io.Discard); code != 0 {
		t.Errorf("serve -h: exit %d", code)
	}
}

// TestServePythonPika checks that a non-Go client works: Python's pika
// publishes, gets and acknowledges through "amqpsim serve". It needs
// python3 with pika (Debian: apt-get install python3-pika).
func TestServePythonPika(t *testing.T) {
	python := ""
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import pika").Run() == nil {
			python = p
			break
		}
	}
	if python == "" {
		t.Skip("python3 with pika not found; install it (Debian: apt-get install python3-pika) to run this test")
	}
	amqpURL, _ := startServe(t, "--addr", "127.0.0.1:0")
	script := `
import sys, pika
conn = pika.BlockingConnection(pika.URLParameters(sys.argv[1]))
ch = conn.channel()
ch.confirm_delivery()
ch.queue_declare(queue="py")
for b in (b"one", b"two"):
    ch.basic_publish(exchange="", routing_key="py", body=b, properties=pika.BasicProperties(content_type="text/plain"))
method, props, body = ch.basic_get(queue="py")
print(body.decode(), props.content_type, method.message_count)
ch.basic_ack(method.delivery_tag)
for method, props, body in ch.consume("py", inactivity_timeout=2):
    print(body.decode())
    ch.basic_ack(method.delivery_tag)
    break
ch.cancel()
print(ch.queue_declare(queue="py", passive=True).method.message_count)
conn.close()
`
	out, err := exec.Command(python, "-c", script, amqpURL).CombinedOutput()
	if err != nil {
		t.Fatalf("pika: %v\n%s", err, out)
	}
	if got, want := string(out), "one text/plain 1\ntwo\n0\n"; got != want {
		t.Errorf("pika printed %q, want %q", got, want)
	}
}

// TestServeFaults drives the fault endpoints with amqp091-go over TCP:
// an alarm blocks a publisher until cleared, injected nacks reach its
// confirms, and forced closes and a restart close it with 320.
func TestServeFaults(t *testing.T) {
	amqpURL, api := startServe(t, "--addr", "127.0.0.1:0", "--http", "127.0.0.1:0")
	dial := func() (*amqp.Connection, *amqp.Channel) {
		conn, err := amqp.Dial(amqpURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeConn(t, conn) })
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		return conn, ch
	}
	conn, ch := dial()
	blocked := conn.NotifyBlocked(make(chan amqp.Blocking, 2))
	ch.QueueDeclare("jobs", false, false, false, false, nil)
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}

	if code := getJSON(t, "POST", api+"/api/sim/alarm?resource=memory&on=true", nil); code != 200 {
		t.Fatalf("alarm: status %d", code)
	}
	c, _ := ch.PublishWithDeferredConfirm("", "jobs", false, false, amqp.Publishing{Body: []byte("held")})
	if bl := recv(t, blocked, "connection.blocked"); !bl.Active || bl.Reason != "low on memory" {
		t.Errorf("got %+v", bl)
	}
	getJSON(t, "POST", api+"/api/sim/alarm?resource=memory&on=false", nil)
	if bl := recv(t, blocked, "connection.unblocked"); bl.Active {
		t.Errorf("got %+v, want unblocked", bl)
	}
	if !confirmed(t, c) {
		t.Error("the held publish was nacked")
	}

	getJSON(t, "POST", api+"/api/sim/nack-publishes?n=1", nil)
	c, _ = ch.PublishWithDeferredConfirm("", "jobs", false, false, amqp.Publishing{Body: []byte("refused")})
	if confirmed(t, c) {
		t.Error("an injected nack was acked")
	}

	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	getJSON(t, "POST", api+"/api/sim/close-connections?reason=maintenance", nil)
	if e := recv(t, closed, "the forced close"); e == nil || e.Code != 320 || e.Reason != "CONNECTION_FORCED - maintenance" {
		t.Errorf("close %v", e)
	}
	conn, _ = dial()
	closed = conn.NotifyClose(make(chan *amqp.Error, 1))
	getJSON(t, "POST", api+"/api/sim/restart", nil)
	if e := recv(t, closed, "the restart's close"); e == nil || e.Code != 320 || !strings.Contains(e.Reason, "'shutdown'") {
		t.Errorf("restart close %v", e)
	}

	for _, bad := range []string{"/api/sim/alarm?resource=cpu&on=true", "/api/sim/alarm?resource=disk&on=maybe", "/api/sim/nack-publishes?n=-1"} {
		if code := getJSON(t, "POST", api+bad, nil); code != 400 {
			t.Errorf("%s: status %d, want 400", bad, code)
		}
	}
}

// TestServeHTTPAuthenticates: the management API and the simulator's
// controls answer only the broker's users, as RabbitMQ's plugin does.
func TestServeHTTPAuthenticates(t *testing.T) {
	_, api := startServe(t, "--addr", "127.0.0.1:0", "--http", "127.0.0.1:0", "--clock", "manual", "--user", "ops", "--pass", "s3cret")
	for _, c := range []struct {
		method, path, user, pass string
		want                     int
	}{
		{"GET", "/api/overview", "", "", 401},
		{"GET", "/api/overview", "ops", "wrong", 401},
		{"POST", "/api/sim/advance?by=1m", "", "", 401},
		{"POST", "/api/sim/restart", "ops", "wrong", 401},
		{"GET", "/api/overview", "ops", "s3cret", 200},
		{"POST", "/api/sim/advance?by=1m", "ops", "s3cret", 200},
	} {
		req, _ := http.NewRequest(c.method, api+c.path, nil)
		if c.user != "" {
			req.SetBasicAuth(c.user, c.pass)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s as %q: %d, want %d", c.method, c.path, c.user, resp.StatusCode, c.want)
		}
	}
}

// TestServeCloseAtDelivery: the channel closes at the armed delivery,
// with the code and text asked for; bad queries are 400.
func TestServeCloseAtDelivery(t *testing.T) {
	amqpURL, api := startServe(t, "--addr", "127.0.0.1:0", "--http", "127.0.0.1:0")
	conn, err := amqp.Dial(amqpURL)
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn(t, conn)
	ch, _ := conn.Channel()
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	ch.QueueDeclare("cad", false, false, false, false, nil)
	for _, body := range []string{"m1", "m2", "m3"} {
		ch.Publish("", "cad", false, false, amqp.Publishing{Body: []byte(body)})
	}
	if code := getJSON(t, "POST", api+"/api/sim/close-at-delivery?n=2&queue=cad&code=406&text=boom", nil); code != 200 {
		t.Fatalf("status %d", code)
	}
	ds, err := ch.Consume("cad", "A", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	// amqp091-go drops the deliveries it still buffers when the channel
	// closes, so the client may see fewer than the two before the close;
	// never more.
	var got []string
	for {
		d, ok := recvOK(t, ds, "the deliveries to end with the channel")
		if !ok {
			break
		}
		if got = append(got, string(d.Body)); len(got) > 2 {
			t.Fatalf("delivered %v, more than the two before the close", got)
		}
	}
	if e := recv(t, closed, "the channel's close"); e == nil || e.Code != 406 || e.Reason != "PRECONDITION_FAILED - boom" {
		t.Errorf("closed with %v", e)
	}
	var q map[string]any
	if getJSON(t, "GET", api+"/api/queues/%2F/cad", &q); q["messages_ready"] != 3.0 || q["consumers"] != 0.0 {
		t.Errorf("queue %v, want the two deliveries requeued and no consumer", q)
	}
	for _, bad := range []string{"?n=0", "?n=x", "?n=1&close=sometimes", "?n=1&code=999"} {
		if code := getJSON(t, "POST", api+"/api/sim/close-at-delivery"+bad, nil); code != 400 {
			t.Errorf("%s: status %d, want 400", bad, code)
		}
	}
}

// --consumer-max-per-channel sets 4.0's consumer_max_per_channel: the
// consume past it closes the connection with 530. 3.10 has no such
// setting, so serve refuses the flag there.
func TestServeConsumerMaxPerChannel(t *testing.T) {
	// The deadline only bounds a serve that takes the flag and serves,
	// so that the test fails instead of hanging.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err := serve(ctx, []string{"--addr", "127.0.0.1:0", "--rabbitmq", "3.10", "--consumer-max-per-channel", "1"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "consumer_max_per_channel") {
		t.Errorf("3.10 with --consumer-max-per-channel: %v", err)
	}
	amqpURL, _ := startServe(t, "--addr", "127.0.0.1:0", "--rabbitmq", "4.0", "--consumer-max-per-channel", "1")
	conn, err := amqp.Dial(amqpURL + "?heartbeat=0")
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn(t, conn)
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("q", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Consume("q", "a", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	_, err = ch.Consume("q", "b", false, false, false, false, nil)
	var aerr *amqp.Error
	if !errors.As(err, &aerr) || aerr.Code != 530 || aerr.Reason != "NOT_ALLOWED - reached maximum (1) of consumers per channel" {
		t.Fatalf("second consume: %v", err)
	}
	recvOK(t, conn.NotifyClose(make(chan *amqp.Error, 1)), "the 530's connection.close")
	if !conn.IsClosed() {
		t.Error("the connection is open after a 530")
	}
}

// TestServeSaltsAreRandom: without --seed, two runs hash the same
// password with different salts (crypto/rand, as RabbitMQ's
// rabbit_password:generate_salt/0); with one seed they hash it alike.
func TestServeSaltsAreRandom(t *testing.T) {
	hash := func(args ...string) string {
		t.Helper()
		_, api := startServe(t, append([]string{"--addr", "127.0.0.1:0", "--http", "127.0.0.1:0", "--clock", "manual"}, args...)...)
		var u map[string]any
		if code := getJSON(t, "GET", api+"/api/users/guest", &u); code != 200 {
			t.Fatalf("GET /api/users/guest: %d", code)
		}
		h, _ := u["password_hash"].(string)
		if h == "" {
			t.Fatalf("no password_hash in %v", u)
		}
		return h
	}
	if a, b := hash(), hash(); a == b {
		t.Errorf("two runs without --seed hashed guest alike: %s", a)
	}
	if a, b := hash("--seed", "7"), hash("--seed", "7"); a != b {
		t.Errorf("two runs with --seed 7 hashed guest differently: %s, %s", a, b)
	}
}

// TestServePasswordSources: the password comes from --pass, --pass-file
// (less a final newline) or $AMQPSIM_PASS, in that order, else guest; a
// blank one, or --pass with --pass-file, is refused.
func TestServePasswordSources(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	login := func(api, pass string) int {
		req, _ := http.NewRequest("GET", api+"/api/whoami", nil)
		req.SetBasicAuth("guest", pass)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	base := []string{"--addr", "127.0.0.1:0", "--http", "127.0.0.1:0", "--clock", "manual"}
	t.Setenv(passEnv, "from-env")
	for _, c := range []struct {
		name string
		args []string
		pass string
	}{
		{"pass-file", []string{"--pass-file", file("pw", "from-file\n")}, "from-file"},
		{"pass-file CRLF", []string{"--pass-file", file("pwcrlf", "from-file\r\n")}, "from-file"},
		{"environment", nil, "from-env"},
		{"pass wins", []string{"--pass", "from-flag"}, "from-flag"},
	} {
		_, api := startServe(t, append(base, c.args...)...)
		if code := login(api, c.pass); code != 200 {
			t.Errorf("%s: guest:%s got %d", c.name, c.pass, code)
		}
	}
	for _, c := range []struct {
		name string
		args []string
		env  string
	}{
		{"both", []string{"--pass", "x", "--pass-file", file("pw2", "y")}, "x"},
		{"blank file", []string{"--pass-file", file("empty", "\n")}, "x"},
		{"blank flag", []string{"--pass", ""}, "x"},
		{"blank environment", nil, ""},
		{"missing file", []string{"--pass-file", dir + "/none"}, "x"},
	} {
		t.Setenv(passEnv, c.env)
		if err := serve(context.Background(), append(base, c.args...), io.Discard, io.Discard); err == nil {
			t.Errorf("%s: served", c.name)
		}
	}
}

// TestServeMemoryWatermark: with the Go heap above --memory-high-watermark
// the memory alarm blocks the publisher (connection.blocked "low on
// memory", RabbitMQ's words); once the queue is purged and the heap falls
// back, connection.unblocked. The test waits for the broker's signals,
// each within a generous bound that fails loudly; the heap it measures is
// the test process's, which serve runs in.
func TestServeMemoryWatermark(t *testing.T) {
	amqpURL, api := startServe(t, "--addr", "127.0.0.1:0", "--http", "127.0.0.1:0", "--clock", "manual", "--memory-high-watermark", "96MiB")
	conn, err := amqp.Dial(amqpURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	blocked := conn.NotifyBlocked(make(chan amqp.Blocking, 4))
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("flood", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 1<<20)
	wait := func(what string, want bool) {
		t.Helper()
		select {
		case b := <-blocked:
			if b.Active != want {
				t.Fatalf("%s: connection.blocked active=%t (%q)", what, b.Active, b.Reason)
			}
			if want && b.Reason != "low on memory" {
				t.Errorf("%s: reason %q, want %q", what, b.Reason, "low on memory")
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: no connection.blocked change within 60 s", what)
		}
	}
	// Publish 1 MiB messages until blocked; the publish that finds the
	// alarm up is held, so publish from a goroutine.
	go func() {
		for i := 0; i < 1000; i++ {
			if ch.Publish("", "flood", false, false, amqp.Publishing{Body: body}) != nil {
				return
			}
		}
	}()
	wait("flooding", true)
	req, _ := http.NewRequest("DELETE", api+"/api/queues/%2F/flood/contents", nil)
	req.SetBasicAuth("guest", "guest")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	wait("purged", false)
}
