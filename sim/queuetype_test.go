package sim_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// typeTestExceptions lists the queue-type tests allowed in sim's code, as
// "file.go: what" (what as the test reports it, e.g. "file.go: the name
// quorum"), each with the reason beside it. Keep it empty: a type's rule
// belongs to package queue, where each type answers for its own.
var typeTestExceptions = []string{}

// The broker never tests a queue's type: it asks the queue (queue.Queue's
// Consume, Get, CheckSettle, CheckDelete, Purge, Restart, ...), and the
// type answers with its rule or RabbitMQ's refusal, so that a new type or
// a release's rule changes package queue only.
func TestSimDoesNotTestQueueTypes(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range queueTypeTests(fset, f) {
			if !slices.Contains(typeTestExceptions, name+": "+p.what) {
				t.Errorf("%s: %s: tests a queue's type; ask the queue instead (a method of queue.Queue)", p.pos, p.what)
			}
		}
	}
}

// The checker finds each kind of queue-type test (the lines marked
// "want") and nothing else (those marked "fine").
func TestQueueTypeTestsFound(t *testing.T) {
	const src = `package sim
func f(q *brokerQueue, ch *Channel, args Table) {
	if q.quorum {}                                      // want: a type flag
	_ = q.Type() == 1                                   // want: a comparison of Type()
	_ = queue.Stream                                    // want: a type constant
	switch q.Type() {}                                  // want: a switch on it
	_, _ = q.Queue.(queue.Streamer[*Consumer])          // want: an assertion to a type's interface
	switch q.Queue.(type) { case *queue.Foo: }          // want: a type switch
	_, _ = q.Queue.(interface{ Attach() })              // want: an assertion on the queue
	_ = args["x-queue-type"] == "stream"                // want: a type's name
	_ = protocol.Errorf(1, m, "by quorum queues %s", q) // want: a type's error text
	_ = &protocol.Error{Text: "stream queue"}            // want: another
	_ = q.Type().String()                               // fine: the name, for display
	_ = "x-stream-offset"                               // fine: an argument
	switch v := args["x"].(type) { case string: _ = v } // fine: not a queue
}`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "example.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := map[int]bool{}
	for _, p := range queueTypeTests(fset, f) {
		found[p.pos.Line] = true
	}
	for i, line := range strings.Split(src, "\n") {
		want := strings.Contains(line, "// want")
		if found[i+1] != want {
			t.Errorf("line %d: found %t, want %t: %s", i+1, found[i+1], want, strings.TrimSpace(line))
		}
	}
}

// typeNames are the queue types' names.
var typeNames = []string{"classic", "quorum", "stream"}

// typeTest is one queue-type test found in a file.
type typeTest struct {
	pos  token.Position
	what string
}

// queueTypeTests returns f's queue-type tests: a
// selector named after a type (q.quorum, queue.Stream), a comparison or
// switch on a Type() call, a type assertion or type switch to a type of
// package queue, a string literal that is a type's name (or its Erlang
// binary), and an error text that names a type.
func queueTypeTests(fset *token.FileSet, f *ast.File) []typeTest {
	var out []typeTest
	report := func(n ast.Node, what string) {
		out = append(out, typeTest{fset.Position(n.Pos()), what})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			sel := strings.ToLower(n.Sel.Name)
			if slices.Contains(typeNames, sel) && (isIdent(n.X, "queue") || n.Sel.Name == sel) {
				report(n, "selector "+n.Sel.Name)
			}
		case *ast.BinaryExpr:
			if (n.Op == token.EQL || n.Op == token.NEQ) && (isTypeCall(n.X) || isTypeCall(n.Y)) {
				report(n, "comparison of Type()")
			}
		case *ast.SwitchStmt:
			if n.Tag != nil && isTypeCall(n.Tag) {
				report(n, "switch on Type()")
			}
		case *ast.TypeAssertExpr:
			if n.Type != nil && (mentionsQueue(n.Type) || isQueueField(n.X)) {
				report(n, "type assertion")
			}
		case *ast.TypeSwitchStmt:
			if typeSwitchOnQueue(n) {
				report(n, "type switch")
			}
		case *ast.BasicLit:
			if n.Kind != token.STRING {
				break
			}
			s, err := strconv.Unquote(n.Value)
			if err != nil {
				break
			}
			for _, name := range typeNames {
				if s == name || s == `<<"`+name+`">>` {
					report(n, "the name "+s)
				}
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && isIdent(sel.X, "protocol") && sel.Sel.Name == "Errorf" && len(n.Args) >= 3 {
				if namesType(n.Args[2]) {
					report(n, "an error text of a queue type")
				}
			}
		case *ast.CompositeLit:
			if sel, ok := n.Type.(*ast.SelectorExpr); ok && isIdent(sel.X, "protocol") && sel.Sel.Name == "Error" {
				for _, e := range n.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok && isIdent(kv.Key, "Text") && namesType(kv.Value) {
						report(n, "an error text of a queue type")
					}
				}
			}
		}
		return true
	})
	return out
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// isTypeCall reports whether e is a call of a method named Type.
func isTypeCall(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Type"
}

// isQueueField reports whether e is the queue a brokerQueue embeds
// (q.Queue).
func isQueueField(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Queue"
}

// typeSwitchOnQueue reports whether a type switch is on a queue or has
// a case of package queue.
func typeSwitchOnQueue(n *ast.TypeSwitchStmt) bool {
	var x ast.Expr
	switch a := n.Assign.(type) {
	case *ast.ExprStmt:
		x = a.X
	case *ast.AssignStmt:
		x = a.Rhs[0]
	}
	if ta, ok := x.(*ast.TypeAssertExpr); ok && isQueueField(ta.X) {
		return true
	}
	for _, c := range n.Body.List {
		for _, e := range c.(*ast.CaseClause).List {
			if mentionsQueue(e) {
				return true
			}
		}
	}
	return false
}

// mentionsQueue reports whether a type expression names package queue.
func mentionsQueue(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && isIdent(sel.X, "queue") {
			found = true
		}
		return !found
	})
	return found
}

// namesType reports whether e is a string literal that names a queue
// type.
func namesType(e ast.Expr) bool {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return false
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return false
	}
	s = strings.ToLower(s)
	return slices.ContainsFunc(typeNames, func(name string) bool { return strings.Contains(s, name) })
}
