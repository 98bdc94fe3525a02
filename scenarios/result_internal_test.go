package scenarios

import "testing"

// A reply text recorded with prefixed names (the term laid out further
// right, the text cut at 255 bytes) matches the simulator's, and nothing
// else does.
func TestSameLine(t *testing.T) {
	recorded := `c3b <- connection.close 541 (basic.get): INTERNAL_ERROR - Cannot get a message from queue 'queue 'qq' in vhost '/'': {timeout,\n` +
		`        {'%2F_qq',\n         'r...`
	for _, c := range []struct {
		got  string
		same bool
	}{
		{recorded, true},
		{`c3b <- connection.close 541 (basic.get): INTERNAL_ERROR - Cannot get a message from queue 'queue 'qq' in vhost '/'': {timeout,\n    {'%2F_qq',\n     'rmq-c3@localhost'}}`, true},
		{`c3b <- connection.close 541 (basic.get): INTERNAL_ERROR - Cannot get a message from queue 'queue 'qq' in vhost '/'': {timeout,{'%2F_qq','rmq-c3@localhost'}}`, true},
		{`c3b <- connection.close 541 (basic.get): INTERNAL_ERROR - Cannot get a message from queue 'queue 'qq' in vhost '/'': {timeout,{'%2F_qq',rabbit@node3}}`, false},
		{`c3b <- connection.close 541 (basic.get): INTERNAL_ERROR - Cannot get a message from queue 'queue 'qq' in vhost '/'': nodedown`, false},
		{`c3b <- connection.close 541 (basic.get): INTERNAL_ERROR - Cannot get a message from queue 'queue 'qq' in vhost '/'': {timeout,`, false},
	} {
		if got := sameLine(recorded, c.got); got != c.same {
			t.Errorf("sameLine(recorded, %q) = %v, want %v", c.got, got, c.same)
		}
		if got := sameLine(c.got, recorded); got != c.same {
			t.Errorf("sameLine(%q, recorded) = %v, want %v", c.got, got, c.same)
		}
	}
	if sameLine("q1 <- m1", "q1 <- m2") {
		t.Errorf("different lines are the same")
	}
}
