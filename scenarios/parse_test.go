package scenarios

import (
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/amqpsim/amqpsim/protocol"
)

func TestParseErrorsNameFileLineColumn(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"conn c1\nchannel c1.ch1\nconsume ch1 q tag=A prefetch=2\n",
			`f.txt:3:21: unknown option "prefetch" for consume (usage: consume CHANNEL QUEUE tag=TAG [no-ack] [exclusive] [x-ARG=V...])`},
		{"conn c1\nchannel c1.ch1\nconsume ch1 q\n", "f.txt:3:13: expected tag=TAG after the queue: scenarios use explicit consumer tags"},
		{"conn c1\nqos ch9 1\n", `f.txt:2:5: unknown channel "ch9" (open it first with "channel CONN.ch9")`},
		{"frobnicate x\n", `f.txt:1:1: unknown step "frobnicate" (expected one of ack, advance, alarm, bind, bind-exchange, cancel,`},
		{"  A <- m1 #1\n", "f.txt:1:1: expected a step, a directive or a comment: an indented result line must follow a step"},
		{"conn c1\nchannel c1.ch1\npublish ch1 q \"m1\n", `f.txt:3:15: unterminated quoted string (expected a closing '"')`},
		{"conn c1\nchannel c1.ch1\nqos ch1 70000\n", `f.txt:3:9: expected a prefetch count 0..65535, got "70000"`},
		{"conn c1\nchannel c1\n", `f.txt:2:9: expected CONN.NAME (a connection and a new channel name), got "c1"`},
		{"conn c1\nconn c1\n", `f.txt:2:6: the name "c1" is already used by an earlier conn or channel step`},
		{"conn c1\nchannel c1.ch1\ndeclare-queue ch1 q x-max-priority=bogus(1)\n", `f.txt:3:21: unknown value type "bogus"`},
		{"conn c1\nsource hand-written\n", "f.txt:2:1: the source directive must come before the first step"},
		{"advance soon\n", `f.txt:1:9: expected a duration such as 500ms or 31m, got "soon"`},
		{"conn c1\nchannel c1.ch1\nflow ch1 sideways\n", `f.txt:3:10: expected on or off, got "sideways"`},
		{"conn c1\nchannel c1.ch1\nget ch1\n", "f.txt:3:8: expected 2 word(s) after get (usage: get CHANNEL QUEUE [no-ack])"},
		{"alarm cpu\n", `f.txt:1:7: expected memory or disk, got "cpu"`},
		{"alarm memory disk\n", `f.txt:1:14: unexpected "disk"`},
		{"alarm clear swap\n", `f.txt:1:13: expected memory or disk, got "swap"`},
	} {
		_, err := Parse("f.txt", []byte(tc.src))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Parse(%q):\n got %v\nwant %s", tc.src, err, tc.want)
		}
	}
}

func TestParseKeepsEverythingForFormat(t *testing.T) {
	src := `# title
#   indented comment text
source hand-written
seed 7

conn c1
channel c1.ch1
# between steps
declare-queue ch1 "my queue" x-max-priority=5
  declare-ok ready=0 consumers=0
  # among results
publish ch1 "my queue" "hello world" m2 persistent header.n=long(3)
`
	s, err := Parse("x.txt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if s.Seed != 7 || s.Source != "hand-written" || s.Name != "x" || len(s.Steps) != 4 {
		t.Fatalf("parsed %+v", s)
	}
	want := DeclareQueue{Channel: "ch1", Queue: "my queue", Args: protocol.Table{"x-max-priority": int32(5)}}
	if d := cmp.Diff(Op(want), s.Steps[2].Op); d != "" {
		t.Errorf("declare op (-want +got):\n%s", d)
	}
	if got := string(s.Format()); got != src {
		t.Errorf("Format changed the file:\n%s", cmp.Diff(src, got))
	}
}

func TestLibraryFilesRoundTrip(t *testing.T) {
	list, err := LoadFS(Library(), ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		src, _ := fs.ReadFile(Library(), s.Path)
		if got := string(s.Format()); got != string(src) {
			t.Errorf("%s: Format differs from the file:\n%s", s.Path, cmp.Diff(string(src), got))
		}
		for _, st := range s.Steps {
			back, err := parseOp(st.Op.String())
			if err != nil || !cmp.Equal(back, st.Op) {
				t.Errorf("%s:%d: %q does not round-trip through %q: %v", s.Path, st.Line, st.Text, st.Op.String(), err)
			}
		}
	}
}

// genOp draws a random operation whose fields survive the text form.
func genOp(t *rapid.T) Op {
	name := rapid.SampledFrom([]string{"ch1", "q", "orders", "a-b_c", "with space", "", "durable", "#1", "x=y", "é", "a(b", "#.paid", "p)"})
	ident := rapid.SampledFrom([]string{"ch1", "c2", "x_y-z"})
	value := rapid.SampledFrom([]any{int32(5), int32(-3), int64(7), int64(1 << 40), int8(1), uint8(2), int16(3), uint16(4),
		uint32(6), float32(1.5), 2.25, float64(3), "text", "5", "true", "", "a b", true, false, nil})
	table := func() protocol.Table {
		n := rapid.IntRange(0, 3).Draw(t, "n")
		if n == 0 {
			return nil
		}
		tb := protocol.Table{}
		for i := 0; i < n; i++ {
			k := rapid.SampledFrom([]string{"x-priority", "x-max-priority", "color", "size"}).Draw(t, "key")
			tb[k] = value.Draw(t, "value")
		}
		return tb
	}
	b := rapid.Bool()
	ch := ident.Draw(t, "ch")
	switch rapid.IntRange(0, 38).Draw(t, "kind") {
	case 0:
		return Conn{Name: ident.Draw(t, "c")}
	case 1:
		return OpenChannel{Conn: ident.Draw(t, "c"), Name: ch}
	case 2:
		return Close{Name: ch}
	case 3:
		return DeclareQueue{Channel: ch, Queue: name.Draw(t, "q"), Passive: b.Draw(t, "p"), Durable: b.Draw(t, "d"), Exclusive: b.Draw(t, "e"), AutoDelete: b.Draw(t, "a"), NoWait: b.Draw(t, "nw"), Args: table()}
	case 4:
		return DeclareExchange{Channel: ch, Exchange: name.Draw(t, "x"), Kind: "topic", Passive: b.Draw(t, "p"), Durable: b.Draw(t, "d"), AutoDelete: b.Draw(t, "a"), Internal: b.Draw(t, "i"), Args: table()}
	case 5:
		return DeleteQueue{Channel: ch, Queue: name.Draw(t, "q"), IfUnused: b.Draw(t, "u"), IfEmpty: b.Draw(t, "e")}
	case 6:
		return DeleteExchange{Channel: ch, Exchange: name.Draw(t, "x"), IfUnused: b.Draw(t, "u")}
	case 7:
		return Bind{Channel: ch, Queue: name.Draw(t, "q"), Exchange: name.Draw(t, "x"), Key: name.Draw(t, "k"), Args: table()}
	case 8:
		return Unbind{Channel: ch, Queue: name.Draw(t, "q"), Exchange: name.Draw(t, "x"), Key: name.Draw(t, "k"), Args: table()}
	case 9:
		return Purge{Channel: ch, Queue: name.Draw(t, "q")}
	case 10:
		return Qos{Channel: ch, Count: rapid.IntRange(0, 65535).Draw(t, "n"), Size: rapid.IntRange(0, 1<<20).Draw(t, "s"), Global: b.Draw(t, "g")}
	case 11:
		tag := rapid.SampledFrom([]string{"A", "b c", "requeue"}).Draw(t, "tag")
		return Consume{Channel: ch, Queue: name.Draw(t, "q"), Tag: tag, NoAck: b.Draw(t, "n"), Exclusive: b.Draw(t, "e"), Args: table()}
	case 12:
		return Cancel{Channel: ch, Tag: name.Draw(t, "tag")}
	case 13:
		p := Publish{Channel: ch, Key: name.Draw(t, "k"), Bodies: rapid.SliceOfN(name, 1, 3).Draw(t, "bodies"), Mandatory: b.Draw(t, "m"), Immediate: b.Draw(t, "imm"),
			Exchange: rapid.SampledFrom([]string{"", "logs", "amq.direct"}).Draw(t, "x")}
		p.Props.DeliveryMode = rapid.SampledFrom([]uint8{0, 1, 2}).Draw(t, "dm")
		p.Props.Priority = uint8(rapid.IntRange(0, 9).Draw(t, "prio"))
		p.Props.MessageID = name.Draw(t, "id")
		p.Props.Headers = table()
		return p
	case 14:
		return Confirm{Channel: ch}
	case 15:
		return Get{Channel: ch, Queue: name.Draw(t, "q"), NoAck: b.Draw(t, "n")}
	case 16:
		m := rapid.SampledFrom([]string{"ack", "nack", "reject"}).Draw(t, "m")
		s := Settle{Method: m, Channel: ch, Multiple: m != "reject" && b.Draw(t, "multi"), Requeue: m != "ack" && b.Draw(t, "rq")}
		if b.Draw(t, "byName") {
			s.Msg = rapid.SampledFrom([]string{"m1", "multiple", "#3", "a b"}).Draw(t, "msg")
		} else {
			s.Tag = rapid.Uint64Range(0, 1<<20).Draw(t, "tag")
		}
		return s
	case 17:
		return Recover{Channel: ch, Requeue: b.Draw(t, "rq")}
	case 18:
		return Flow{Channel: ch, Active: b.Draw(t, "a")}
	case 19:
		return Advance{D: time.Duration(rapid.Int64Range(0, int64(time.Hour)).Draw(t, "d"))}
	case 20:
		return ShowQueue{Queue: name.Draw(t, "q")}
	case 21:
		return ShowHeaders{Channel: ch, Msg: name.Draw(t, "msg")}
	case 22:
		return ShowEnvelope{Channel: ch, Msg: name.Draw(t, "msg")}
	case 23:
		return ExchangeBind{Channel: ch, Destination: name.Draw(t, "d"), Source: name.Draw(t, "s"), Key: name.Draw(t, "k"), Args: table()}
	case 24:
		return ExchangeUnbind{Channel: ch, Destination: name.Draw(t, "d"), Source: name.Draw(t, "s"), Key: name.Draw(t, "k"), Args: table()}
	case 25:
		return Tx{Channel: ch, Method: rapid.SampledFrom([]TxMethod{TxSelect, TxCommit, TxRollback}).Draw(t, "tx")}
	case 26:
		def := protocol.Table{"max-length": int32(rapid.IntRange(0, 9).Draw(t, "ml"))}
		return SetPolicy{Name: ident.Draw(t, "p"), Pattern: "^" + ident.Draw(t, "pat"), ApplyTo: rapid.SampledFrom([]string{"", "queues", "all"}).Draw(t, "at"),
			Priority: rapid.IntRange(-3, 9).Draw(t, "prio"), Definition: def}
	case 27:
		return ClearPolicy{Name: ident.Draw(t, "p")}
	case 28:
		clear := b.Draw(t, "clear")
		res := rapid.SampledFrom([]string{"memory", "disk", ""}).Draw(t, "resource")
		if !clear && res == "" {
			res = "memory"
		}
		return Alarm{Resource: res, Clear: clear}
	case 29:
		return Conn{Name: ident.Draw(t, "c"), User: ident.Draw(t, "u"), Password: name.Draw(t, "pw")}
	case 30:
		var tags []string
		if rapid.Bool().Draw(t, "tagged") {
			tags = []string{"management", ident.Draw(t, "tag")}
		}
		return AddUser{Name: ident.Draw(t, "u"), Password: name.Draw(t, "pw"), Tags: tags}
	case 31:
		return DeleteUser{Name: ident.Draw(t, "u")}
	case 32:
		re := rapid.SampledFrom([]string{"", ".*", "^a", `^(x|y)\.`, "a b"})
		return SetPermissions{User: ident.Draw(t, "u"), Configure: re.Draw(t, "c"), Write: re.Draw(t, "w"), Read: re.Draw(t, "r")}
	case 33:
		return ClearPermissions{User: ident.Draw(t, "u")}
	case 34:
		return SetOperatorPolicy{Name: ident.Draw(t, "p"), Pattern: "^" + ident.Draw(t, "pat"), ApplyTo: "queues",
			Definition: protocol.Table{"max-length": int32(rapid.IntRange(0, 9).Draw(t, "ml"))}}
	case 35:
		return ClearOperatorPolicy{Name: ident.Draw(t, "p")}
	case 36:
		var tags []string
		for range rapid.IntRange(0, 2).Draw(t, "ntags") {
			tags = append(tags, rapid.SampledFrom([]string{"impersonator", "management", "a b"}).Draw(t, "tag"))
		}
		return SetUserTags{Name: ident.Draw(t, "u"), Tags: tags}
	case 37:
		re := rapid.SampledFrom([]string{"", ".*", "^a", "^{username}$", "{vhost}", "a b"})
		return SetTopicPermissions{User: ident.Draw(t, "u"), Exchange: name.Draw(t, "x"), Write: re.Draw(t, "w"), Read: re.Draw(t, "r")}
	case 38:
		k := rapid.SampledFrom(faultKinds).Draw(t, "fault")
		if _, armed := armedActions[k]; armed && (k == FaultCloseEveryConnection || rapid.Bool().Draw(t, "armed")) {
			return Fault{Kind: k, AtDelivery: rapid.IntRange(1, 99).Draw(t, "at")}
		}
		switch k {
		case FaultNackPublishes:
			return Fault{Kind: k, Count: rapid.IntRange(1, 9).Draw(t, "count")}
		case FaultRestart:
			return Fault{Kind: k}
		case FaultConsumerTimeout:
			return Fault{Kind: k, Name: ch}
		default:
			return Fault{Kind: k, Name: ch, Code: rapid.SampledFrom([]int{0, 404, 541}).Draw(t, "code"),
				Text: rapid.SampledFrom([]string{"", "gone", "a b"}).Draw(t, "text")}
		}
	}
	return ShowHeld{}
}

// Every operation's String is read back as the same operation.
func TestOpStringRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		op := genOp(t)
		text := op.String()
		back, err := parseOp(text)
		if err != nil {
			t.Fatalf("parseOp(%q): %v", text, err)
		}
		if d := cmp.Diff(op, back); d != "" {
			t.Fatalf("%q read back differently (-want +got):\n%s", text, d)
		}
	})
}

func TestFaultStepErrors(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"fault", "expected 1 word(s) after fault"},
		{"fault explode", `unknown fault "explode" (expected close-channel, close-connection`},
		{"fault close-channel", "expected a name after fault close-channel"},
		{"fault nack-publishes 0", "expected a count of 1 or more"},
		{"fault restart now", `unexpected "now" after fault restart`},
		{"fault close-every-connection", "is only armed: add at-delivery=N"},
		{"fault nack-publishes at-delivery=3", "only close-channel, close-connection, close-every-connection and consumer-timeout take at-delivery="},
		{"fault close-channel ch1 at-delivery=3", "an armed fault names no channel or connection"},
		{"fault close-channel at-delivery=3 text=x", "an armed fault closes with its default text"},
		{"fault consumer-timeout ch1 code=404", "only a close takes code="},
		{"fault close-channel ch1 code=999", "unknown reply code 999"},
	} {
		_, err := parseOp(c.line)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.line, err, c.want)
		}
	}
}
