package sim

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/amqpsim/amqpsim/protocol"
)

// TestSameFieldValueAsBefore: the headers exchange and binding identity
// compare field values without fmt for strings, booleans and integers
// now (fieldText); they must answer as the comparison of fmt.Sprint texts
// did, for values of every type a table holds, same type or not.
func TestSameFieldValueAsBefore(t *testing.T) {
	value := rapid.OneOf(
		rapid.Map(rapid.SampledFrom([]string{"", "1", "true", "a b", "[1]"}), func(s string) any { return s }),
		rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Map(rapid.Int32Range(-2, 2), func(n int32) any { return n }),
		rapid.Map(rapid.Int64Range(-2, 2), func(n int64) any { return n }),
		rapid.Map(rapid.IntRange(-2, 2), func(n int) any { return n }),
		rapid.Map(rapid.Int8Range(-2, 2), func(n int8) any { return n }),
		rapid.Map(rapid.Float64Range(-2, 2), func(f float64) any { return f }),
		rapid.Map(rapid.Int32Range(0, 1), func(n int32) any { return []any{n} }),
		rapid.Map(rapid.Int32Range(0, 1), func(n int32) any { return protocol.Table{"k": n} }),
		rapid.Just[any](nil),
	)
	rapid.Check(t, func(t *rapid.T) {
		a, b := value.Draw(t, "a"), value.Draw(t, "b")
		before := protocol.TypeName(a) == protocol.TypeName(b) && fmt.Sprint(a) == fmt.Sprint(b)
		if got := sameFieldValue(a, b); got != before {
			t.Fatalf("sameFieldValue(%#v, %#v) = %t, fmt.Sprint said %t", a, b, got, before)
		}
		if identical := argsIdentity(Table{"k": a}) == argsIdentity(Table{"k": b}); identical != before {
			t.Fatalf("argsIdentity of %#v and %#v equal %t, fmt.Sprint said %t", a, b, identical, before)
		}
	})
}
