package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestTuneCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(strings.Fields("tune --consumers 2 --handler 1ms --rtt 1ms --backlog 500 --prefetch 1,10"), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "recommended: prefetch 10,") {
		t.Errorf("output:\n%s", out.String())
	}
	out.Reset()
	if code := run(strings.Fields("tune --backlog 100 --prefetch 1 --format json"), &out, &errb); code != 0 || !strings.Contains(out.String(), `"recommended_prefetch": 1`) {
		t.Errorf("json: exit %d\n%s", code, out.String())
	}
	if code := run(strings.Fields("tune --format xml"), &out, &errb); code != 2 {
		t.Errorf("a bad flag: exit %d, want 2", code)
	}
	t.Setenv("AMQP_URL", "")
	errb.Reset()
	if code := run(strings.Fields("tune calibrate"), &out, &errb); code != 2 || !strings.Contains(errb.String(), "--url is required") {
		t.Errorf("calibrate without a URL: exit %d, %q", code, errb.String())
	}
}
