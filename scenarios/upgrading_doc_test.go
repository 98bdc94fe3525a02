package scenarios

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/amqpsim/amqpsim/sim"
)

// upgradingRow is a row of docs/upgrading-consumers.md's table:
// | <a id="ANCHOR"></a>CHANGE (V) | ... | [FILE](../scenarios/library/FILE.txt) | ... |
var upgradingRow = regexp.MustCompile(`^\| <a id="([^"]+)"></a>(.+) \(([0-9.]+)\) \| [^|]+ \| ([^|]+) \| [^|]+ \|$`)

var recordingLink = regexp.MustCompile(`^\[([a-z0-9-]+)\]\(\.\./scenarios/library/([a-z0-9-]+)\.txt\)$`)

// TestUpgradingConsumersDoc checks docs/upgrading-consumers.md: each row
// is a change the profiles know (sim.Changes), from the release it says,
// under the anchor upgrade-check links (ConsumerDoc), and its recording is
// a library file that pins it (undoing the change alone makes the file's
// recording replay differently on a release that has it); a row without
// one cites a measurement the change has. The rows are exactly the
// changes upgrade-check points to.
func TestUpgradingConsumersDoc(t *testing.T) {
	doc, err := os.ReadFile("../docs/upgrading-consumers.md")
	if err != nil {
		t.Fatal(err)
	}
	changes := map[string]sim.Change{}
	for _, c := range sim.Changes() {
		changes[c.Name] = c
	}
	var rows []string
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(line, "| <a id=") {
			continue
		}
		m := upgradingRow.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("a row not in the table's form: %s", line)
			continue
		}
		id, name, since, recording := m[1], m[2], m[3], strings.TrimSpace(m[4])
		rows = append(rows, name)
		c, ok := changes[name]
		switch {
		case !ok:
			t.Errorf("row %q: no change of that name (sim.Changes)", name)
			continue
		case c.Since.String() != since:
			t.Errorf("row %q: from %s, the change is from %s", name, since, c.Since)
		case ConsumerDoc(name) != "docs/upgrading-consumers.md#"+id:
			t.Errorf("row %q: anchor %q, upgrade-check links %q", name, id, ConsumerDoc(name))
		}
		link := recordingLink.FindStringSubmatch(recording)
		if link == nil {
			if c.Measured == "" || !strings.Contains(recording, "measured") {
				t.Errorf("row %q: no recording, and no measurement the change cites: %s", name, recording)
			}
			continue
		}
		if link[1] != link[2] {
			t.Errorf("row %q: the link %s names another file", name, recording)
		}
		if !pins(t, c, link[2]) {
			t.Errorf("row %q: %s does not pin the change: it replays the same with the change undone", name, link[2])
		}
	}
	if !slices.Equal(rows, consumerChanges) {
		t.Errorf("the page's rows\n%q\nare not the changes upgrade-check points to\n%q", rows, consumerChanges)
	}
}

// pins reports whether undoing c alone makes the library file name's
// recording on some release that has c replay differently.
func pins(t *testing.T, c sim.Change, name string) bool {
	t.Helper()
	s, err := ParseFS(Library(), name+".txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []sim.Version{sim.V4_0, sim.V4_3} {
		view, ok := s.On(v)
		if !ok || !atLeast(v, c.Since) {
			continue
		}
		undone := c.Undo(v.Profile(), sim.V3_10.Profile())
		res, err := replayWith(view, sim.Config{Profile: &undone})
		if err != nil {
			t.Fatal(err)
		}
		base, err := replayWith(view, sim.Config{Version: v})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(res.Mismatches()) != fmt.Sprint(base.Mismatches()) {
			return true
		}
	}
	return false
}

// TestUpgradeReportLinksConsumerRows: upgrade-check's report points a
// change the page has a row for to it.
func TestUpgradeReportLinksConsumerRows(t *testing.T) {
	s, err := ParseFS(Library(), "dlx-republish-x-death.txt")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compare(s, sim.V3_10, sim.V4_3)
	if err != nil {
		t.Fatal(err)
	}
	out := Summarize(sim.V3_10, sim.V4_3, []*Comparison{c}).String()
	for _, want := range []string{"classic delivery-count", "for a consumer: docs/upgrading-consumers.md#classic-delivery-count",
		"for a consumer: docs/upgrading-consumers.md#x-last-death-headers"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
}
