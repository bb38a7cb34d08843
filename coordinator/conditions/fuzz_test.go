package conditions

import (
	"context"
	"errors"
	"testing"
)

// FuzzParse: the expression parser never panics; it either returns an
// expression within the structural limits, whose Eval is deterministic,
// or a *ParseError whose offset lies inside the source.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"template_id":"T1"}`,
		`{"op":"AND","operands":[{"template_id":"A"},{"template_id":"B"}]}`,
		`{"op":"THRESHOLD","k":2,"operands":[{"template_id":"A"},{"template_id":"B"},{"template_id":"C"}]}`,
		`{"op":"OR","operands":[{"op":"AND","operands":[{"template_id":"X"}]}]}`,
		`{"op":"XOR"}`, `[]`, `{"template_id":"A"} {}`, `{"k":1e999}`, "\x00", `{"template_id":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		e, err := Parse(src)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse error %T %v is not a *ParseError", err, err)
			}
			if pe.Offset < 0 || pe.Offset > int64(max(len(src), MaxExprBytes)) || pe.Why == "" {
				t.Fatalf("ParseError %+v out of range for %d bytes", pe, len(src))
			}
			return
		}
		if e.Depth() > MaxDepth || len(e.Templates()) > MaxTemplates {
			t.Fatalf("parsed expression breaks a limit: depth %d templates %d", e.Depth(), len(e.Templates()))
		}
		odd := func(id string) LeafResult { return LeafResult{Satisfied: len(id)%2 == 1} }
		a, ra := e.Eval(odd)
		b, rb := e.Eval(odd)
		if a != b || len(ra) != len(rb) || ra[0].Value != a {
			t.Fatalf("Eval is not deterministic: %v %v", a, b)
		}
	})
}

// FuzzParsePredicate: the ledger_predicate_json decoder never panics, and
// a predicate it accepts passes Check and resolves (TIME_*) without error.
func FuzzParsePredicate(f *testing.F) {
	for _, s := range []string{
		`{"type":"TX_REACHED_STATE","txid":"TX-1","states":["SETTLED"]}`,
		`{"type":"GTID_REACHED_STATE","gtid":"GT-1","states":["GT_SETTLED"]}`,
		`{"type":"TIME_AFTER","at":"2026-12-03T12:00"}`, `{"type":"TIME_BEFORE","at":"2026-12-03T03:00:00Z"}`,
		`{"type":"TIME_AFTER"}`, `{"type":"X","at":1}`, `{}`, `[`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		p, err := ParsePredicate(doc)
		if err != nil {
			return
		}
		if err := p.Check(); err != nil {
			t.Fatalf("accepted predicate fails Check: %v", err)
		}
		if p.Type == TimeAfter || p.Type == TimeBefore {
			if _, err := p.Resolve(context.Background(), nil, t0); err != nil {
				t.Fatalf("accepted TIME predicate does not resolve: %v", err)
			}
		}
	})
}
