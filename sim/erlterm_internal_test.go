package sim

import (
	"strings"
	"testing"
)

var spaces = func(n int) string { return strings.Repeat(" ", n) }

// The layouts erl (OTP 25) gives io_lib:format("~ts~p", [Pad, Term]) for
// {timeout,{'%2F_qq', Node}} after Pad of col characters.
func TestErlangTimeoutLayout(t *testing.T) {
	for _, c := range []struct {
		col        int
		node, want string
	}{
		{39, "rmq-c3@localhost", "{timeout,{'%2F_qq','rmq-c3@localhost'}}"},
		{40, "rmq-c3@localhost", "{timeout,\n" + spaces(41) + "{'%2F_qq','rmq-c3@localhost'}}"},
		{47, "rmq-c3@localhost", "{timeout,\n" + spaces(48) + "{'%2F_qq','rmq-c3@localhost'}}"},
		{48, "rmq-c3@localhost", "{timeout,\n" + spaces(49) + "{'%2F_qq',\n" + spaces(50) + "'rmq-c3@localhost'}}"},
		{45, "rabbit@node3", "{timeout,{'%2F_qq',rabbit@node3}}"},
		{46, "rabbit@node3", "{timeout,\n" + spaces(47) + "{'%2F_qq',rabbit@node3}}"},
		{53, "rabbit@node3", "{timeout,\n" + spaces(54) + "{'%2F_qq',rabbit@node3}}"},
		{54, "rabbit@node3", "{timeout,\n" + spaces(55) + "{'%2F_qq',\n" + spaces(56) + "rabbit@node3}}"},
	} {
		if got := erlangTimeout(c.col, "%2F_qq", c.node); got != c.want {
			t.Errorf("column %d, %s:\n got %q\nwant %q", c.col, c.node, got, c.want)
		}
	}
	want := "Cannot get a message from queue 'queue 'qq' in vhost '/'': {timeout,\n" + spaces(60) + "{'%2F_qq',\n" + spaces(61) + "'rmq-c3@localhost'}}"
	if got := getTimedOutText("queue 'qq' in vhost '/'", "%2F_qq", "rmq-c3@localhost"); got != want {
		t.Errorf("get's text:\n got %q\nwant %q", got, want)
	}
}

// The 506 of a transaction's publish to a deleted queue, as RabbitMQ
// 4.3.6 wrote it for queue names of 8 and 9 characters (amqp091-go's
// connection error, 2026-12-06).
func TestMissingQueueErrorLayout(t *testing.T) {
	for name, want := range map[string]string{
		"abcdefgh":  `failed to deliver message: {not_found,{resource,<<"/">>,queue,<<"abcdefgh">>}}`,
		"abcdefghi": "failed to deliver message: {not_found,\n" + strings.Repeat(" ", 31) + `{resource,<<"/">>,queue,<<"abcdefghi">>}}`,
	} {
		if got := strings.TrimPrefix(missingQueueError("/", name).Text, "RESOURCE_ERROR - "); got != want {
			t.Errorf("%s:\n got %q\nwant %q", name, got, want)
		}
	}
}
